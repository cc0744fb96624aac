//! Every attribute of `#[tool(...)]`, each defined once: its name, how its value is
//! written (which is how the macro parses it), where the static spec holds it, and the
//! reference table's cells. The macro's parser, the spec it writes and the table in
//! `docs/macro.md` all follow from these.

use super::*;

/// `side_effects = none | read | write | external` (required).
pub const SIDE_EFFECTS: Attribute = Attribute {
    name: "side_effects",
    form: Form::Word(SideEffects::SET),
    spec: InSpec::Required("side_effects"),
    written: r##"`side_effects`"##,
    value: r##"`none` \| `read` \| `write` \| `external`"##,
    default: r##"**required**"##,
    meaning: r##"what calling the tool does to the world"##,
};

/// `name = "..."`: the tool's name (default: the function's).
pub const NAME: Attribute = Attribute {
    name: "name",
    form: Form::Text,
    spec: InSpec::Settled(Settled::Name),
    written: r##"`name`"##,
    value: r##"string: ASCII letters, digits, `_`, `-`"##,
    default: r##"the function's name"##,
    meaning: r##"the tool's name in its namespace"##,
};

/// `namespace = "..."`: dot-separated namespace segments.
pub const NAMESPACE: Attribute = Attribute {
    name: "namespace",
    form: Form::Text,
    spec: InSpec::Settled(Settled::Namespace),
    written: r##"`namespace`"##,
    value: r##"string: dot-separated segments of the same characters"##,
    default: r##"the crate name"##,
    meaning: r##"groups tools; `llm.openai` is fine"##,
};

/// `version = "..."`: the version (default `"1"`).
pub const VERSION: Attribute = Attribute {
    name: "version",
    form: Form::Text,
    spec: InSpec::Settled(Settled::Version),
    written: r##"`version`"##,
    value: r##"string: ASCII letters, digits, `.`, `_`, `-`, `+`"##,
    default: r##"`"1"`"##,
    meaning: r##"compared semver-aware when resolving `namespace.name`"##,
};

/// `description = "..."` (default: the doc comment's first paragraph).
pub const DESCRIPTION: Attribute = Attribute {
    name: "description",
    form: Form::Text,
    spec: InSpec::Settled(Settled::Description),
    written: r##"`description`"##,
    value: r##"string"##,
    default: r##"the first paragraph of the doc comment"##,
    meaning: r##"what the tool does, for the model; one of the two is required"##,
};

/// `replay_policy = must_stub | fail_loud | recorded_result`.
pub const REPLAY_POLICY: Attribute = Attribute {
    name: "replay_policy",
    form: Form::Word(ReplayPolicy::SET),
    spec: InSpec::Field("replay_policy"),
    written: r##"`replay_policy`"##,
    value: r##"`must_stub` \| `fail_loud` \| `recorded_result`"##,
    default: r##"from `side_effects`: `none`/`read` -> `recorded_result`, `write`/`external` -> `must_stub`"##,
    meaning: r##"what replay does with the tool's calls; `recorded_result` is refused on `write`/`external`"##,
};

/// `requires_capability = "..."` or a list: permissions a caller needs.
pub const REQUIRES_CAPABILITY: Attribute = Attribute {
    name: "requires_capability",
    form: Form::Texts,
    spec: InSpec::Field("permissions"),
    written: r##"`requires_capability`"##,
    value: r##"string or list of strings"##,
    default: r##"none"##,
    meaning: r##"permissions the caller must hold, every one"##,
};

/// `idempotency_key = "field"`.
pub const IDEMPOTENCY_KEY: Attribute = Attribute {
    name: "idempotency_key",
    form: Form::Text,
    spec: InSpec::Field("idempotency_key"),
    written: r##"`idempotency_key`"##,
    value: r##"string: an input parameter's name"##,
    default: r##"none"##,
    meaning: r##"the input field identifying a call for deduplication"##,
};

/// `cost_estimate = "0.25"`: a decimal string.
pub const COST_ESTIMATE: Attribute = Attribute {
    name: "cost_estimate",
    form: Form::Decimal,
    spec: InSpec::Field("cost_estimate"),
    written: r##"`cost_estimate`"##,
    value: r##"decimal **string**, e.g. `"0.015"`"##,
    default: r##"none"##,
    meaning: r##"cost of one call, an exact `rust_decimal::Decimal`"##,
};

/// `tags = ["..."]`.
pub const TAGS: Attribute = Attribute {
    name: "tags",
    form: Form::Texts,
    spec: InSpec::Field("tags"),
    written: r##"`tags`"##,
    value: r##"string or list of strings"##,
    default: r##"none"##,
    meaning: r##"labels for search"##,
};

/// `examples = [...]`: JSON inputs or (input, output) pairs.
pub const EXAMPLES: Attribute = Attribute {
    name: "examples",
    form: Form::Examples,
    spec: InSpec::No,
    written: r##"`examples`"##,
    value: r##"list of JSON strings: `r#"{...}"#` (an input) or `(input, output)` pairs"##,
    default: r##"none"##,
    meaning: r##"checked as JSON at compile time, against the schemas when the registry is built"##,
};

/// `deprecated` or `deprecated = "note"`.
pub const DEPRECATED: Attribute = Attribute {
    name: "deprecated",
    form: Form::FlagOrText,
    spec: InSpec::FlagAnd {
        flag: "deprecated",
        value: "deprecation_note",
        set: true,
    },
    written: r##"`deprecated`"##,
    value: r##"flag, `= true/false`, or `= "note"`"##,
    default: r##"not deprecated"##,
    meaning: r##"hides the tool from search unless asked; the note says what to use instead"##,
};

/// `input_schema = "{...}"`: a hand-written input schema.
pub const INPUT_SCHEMA: Attribute = Attribute {
    name: "input_schema",
    form: Form::Schema,
    spec: InSpec::No,
    written: r##"`input_schema`"##,
    value: r##"JSON string"##,
    default: r##"derived from the parameters"##,
    meaning: r##"replaces the derived input schema (normalized; must be an object schema)"##,
};

/// `output_schema = "{...}"`: a hand-written output schema.
pub const OUTPUT_SCHEMA: Attribute = Attribute {
    name: "output_schema",
    form: Form::Schema,
    spec: InSpec::No,
    written: r##"`output_schema`"##,
    value: r##"JSON string"##,
    default: r##"derived from the return type"##,
    meaning: r##"replaces the derived output schema"##,
};

/// `execution_mode = auto | parallel | sequential`.
pub const EXECUTION_MODE: Attribute = Attribute {
    name: "execution_mode",
    form: Form::Word(ExecutionMode::SET),
    spec: InSpec::WordOr("execution_mode", "auto"),
    written: r##"`execution_mode`"##,
    value: r##"`auto` \| `parallel` \| `sequential`"##,
    default: r##"`auto`"##,
    meaning: r##"in an executor batch: `auto` runs `none`/`read` tools in parallel and `write`/`external` tools one at a time in call order; `parallel` opts a write tool into parallel; `sequential` runs alone"##,
};

/// `needs_approval` or `needs_approval = predicate`.
pub const NEEDS_APPROVAL: Attribute = Attribute {
    name: "needs_approval",
    form: Form::FlagOrPath,
    spec: InSpec::FlagAnd {
        flag: "needs_approval",
        value: "approval_when",
        set: false,
    },
    written: r##"`needs_approval`"##,
    value: r##"flag, `= true/false`, or `= predicate`"##,
    default: r##"false"##,
    meaning: r##"every call (flag), or the calls whose validated input `predicate: fn(&serde_json::Value) -> bool` accepts, must be approved by the runtime's `Approver`; with none configured they are denied"##,
};

/// `timeout_ms = 500`.
pub const TIMEOUT_MS: Attribute = Attribute {
    name: "timeout_ms",
    form: Form::Whole { max: u64::MAX },
    spec: InSpec::Field("timeout_ms"),
    written: r##"`timeout_ms`"##,
    value: r##"whole number"##,
    default: r##"none"##,
    meaning: r##"per-call time limit; past it the call fails with `Timeout`"##,
};

/// `max_result_tokens = 2000`.
pub const MAX_RESULT_TOKENS: Attribute = Attribute {
    name: "max_result_tokens",
    form: Form::Whole {
        max: u32::MAX as u64,
    },
    spec: InSpec::Field("max_result_tokens"),
    written: r##"`max_result_tokens`"##,
    value: r##"whole number"##,
    default: r##"16384"##,
    meaning: r##"longest result (4 characters a token) before the door shapes it; `0` never shapes (warned once)"##,
};

/// `result_shaping = middle | tail | spill_to_file | summarize`.
pub const RESULT_SHAPING: Attribute = Attribute {
    name: "result_shaping",
    form: Form::Word(ResultShaping::SET),
    spec: InSpec::Field("result_shaping"),
    written: r##"`result_shaping`"##,
    value: r##"`middle` \| `tail` \| `spill_to_file` \| `summarize`"##,
    default: r##"by name: `tail` for `code_execution`, `summarize` for `web_search`, else `middle`"##,
    meaning: r##"how a longer result is shaped (see [executor.md](executor.md))"##,
};

/// `secrets = ["..."]`: the secrets the tool may read.
pub const SECRETS: Attribute = Attribute {
    name: "secrets",
    form: Form::Texts,
    spec: InSpec::Field("secrets"),
    written: r##"`secrets`"##,
    value: r##"string or list of strings"##,
    default: r##"none"##,
    meaning: r##"the secrets the tool may read with `ctx.secret(name)`; any other is refused"##,
};

/// `trust = first_party | trusted | untrusted | mcp`.
pub const TRUST: Attribute = Attribute {
    name: "trust",
    form: Form::Word(Trust::SET),
    spec: InSpec::WordOr("trust", "first-party"),
    written: r##"`trust`"##,
    value: r##"`first_party` \| `trusted` \| `untrusted` \| `mcp`"##,
    default: r##"`first_party`"##,
    meaning: r##"the trust ladder: the `priority` collision strategy, and which sanitization policy applies to results"##,
};

/// `blocking`: a synchronous tool that blocks.
pub const BLOCKING: Attribute = Attribute {
    name: "blocking",
    form: Form::Flag,
    spec: InSpec::Field("blocking"),
    written: r##"`blocking`"##,
    value: r##"flag or `= true/false`"##,
    default: r##"false"##,
    meaning: r##"a synchronous tool that blocks: it runs on tokio's blocking threads, off the async workers"##,
};

/// `sensitivity = public | internal | confidential | secret`.
pub const SENSITIVITY: Attribute = Attribute {
    name: "sensitivity",
    form: Form::Word(Sensitivity::SET),
    spec: InSpec::WordOr("sensitivity", "internal"),
    written: r##"`sensitivity`"##,
    value: r##"`public` \| `internal` \| `confidential` \| `secret`"##,
    default: r##"`internal`"##,
    meaning: r##"how sensitive results are: recorded on the span, given to the spill writer; `secret` results are never spilled"##,
};

/// `preferred_model = "fast" | "balanced" | "smart" | "<model>"`.
pub const PREFERRED_MODEL: Attribute = Attribute {
    name: "preferred_model",
    form: Form::Text,
    spec: InSpec::Field("preferred_model"),
    written: r##"`preferred_model`"##,
    value: r##"string: `"fast"`, `"balanced"`, `"smart"` or a model's name"##,
    default: r##"none"##,
    meaning: r##"the model a ReAct run asks in the step after this tool (`ReactSkill::with_model_for`)"##,
};

/// `defer_loading`: the tool is found through `tool_search` instead of being offered up front.
pub const DEFER_LOADING: Attribute = Attribute {
    name: "defer_loading",
    form: Form::Flag,
    spec: InSpec::Field("defer_loading"),
    written: r##"`defer_loading`"##,
    value: r##"flag or `= true/false`"##,
    default: r##"false"##,
    meaning: r##"a ReAct run does not offer the tool up front; the model finds it with `tool_search`"##,
};

/// `reveals_secrets`: the tool's output may hold the caller's secrets on purpose, so the door does not scrub them from it.
pub const REVEALS_SECRETS: Attribute = Attribute {
    name: "reveals_secrets",
    form: Form::Flag,
    spec: InSpec::Field("reveals_secrets"),
    written: r##"`reveals_secrets`"##,
    value: r##"flag or `= true/false`"##,
    default: r##"false"##,
    meaning: r##"the tool's output may hold secrets on purpose (it hands out a credential); otherwise the door replaces the caller's secrets and token-shaped strings with `[REDACTED]`"##,
};

/// `sandbox = in_process | process`: where the tool runs.
pub const SANDBOX: Attribute = Attribute {
    name: "sandbox",
    form: Form::Word(SandboxKind::SET),
    spec: InSpec::WordOr("sandbox", "in-process"),
    written: r##"`sandbox`"##,
    value: r##"`in_process` \| `process`"##,
    default: r##"`in_process`"##,
    meaning: r##"where the tool runs: `process` runs each call in a child process with a cleared environment, CPU-time and memory limits, no network, and a hard kill on timeout (see [security.md](security.md#sandboxes)); the runtime's sandbox resolver may decide otherwise"##,
};

/// `params(a = "...")`: parameter descriptions.
pub const PARAMS: Attribute = Attribute {
    name: "params",
    form: Form::Params,
    spec: InSpec::No,
    written: r##"`params(a = "...", ...)`"##,
    value: r##"descriptions by parameter name"##,
    default: r##"none"##,
    meaning: r##"parameter descriptions"##,
};

/// `crate = "path"`: where the `tackle` crate is, when the macro cannot find it (it is re-exported by another crate).
pub const CRATE: Attribute = Attribute {
    name: "crate",
    form: Form::Path,
    spec: InSpec::No,
    written: r##"`crate`"##,
    value: r##"string: a path, e.g. `"::my_framework::tackle"`"##,
    default: r##"found from `Cargo.toml`"##,
    meaning: r##"where the `tackle` crate is, for crates that reach it through a re-export; a renamed dependency (`tackle2 = { package = "tackle-rs" }`) is found without it"##,
};
