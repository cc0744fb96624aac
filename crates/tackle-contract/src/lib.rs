//! The contract between the `#[tool]` macro and the tackle runtime.
//!
//! The macro reads a tool's attributes when the program compiles; the runtime reads
//! its spec when the program runs. The two must agree on what the attributes are
//! called, which words each enum attribute takes, which characters a name may hold and
//! which replay policy a tool's side effects allow. Each of those rules is defined
//! here, once, and both sides use it:
//!
//! * the macro checks attributes with these rules, and writes an enum value into its
//!   expansion as its word, turned back into the value at compile time by the same
//!   table (`SideEffects::expect("write")` in a `static`): no variant name crosses from
//!   one crate to the other, so renaming a variant changes this crate alone;
//! * the runtime serializes and parses the same words, and checks hand-written specs
//!   with the same functions.
//!
//! Most programs never name this crate: `tackle` re-exports the enums.

#![warn(missing_docs)]

use std::fmt;
use std::str::FromStr;

/// Every attribute of `#[tool(...)]`, each defined once: its name, how its value is
/// written (which is how the macro parses it), where the static spec holds it, and the
/// reference table's cells. The macro's parser, the spec it writes and the table in
/// `docs/macro.md` all follow from these.
pub mod attr {
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
        meaning: r##"the tool's output may hold secrets on purpose (it hands out a credential); otherwise the door replaces the caller's secrets with `<redacted>` and token-shaped strings with `[REDACTED]`"##,
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
}

/// One attribute of `#[tool]`: its name, the form its value takes, where the tool's
/// static spec holds it, and the cells of its row in the reference table (Markdown).
/// Defined once, in [`attr`]: the macro's parser reads a value by its [`Form`], the
/// macro fills the static spec's fields by its [`InSpec`], and the reference table in
/// `docs/macro.md` is [`reference_table`].
#[derive(Clone, Copy, Debug)]
pub struct Attribute {
    /// The attribute's name (`side_effects`).
    pub name: &'static str,
    /// How its value is written: what the parser accepts.
    pub form: Form,
    /// Which field of the static spec holds it, and what that field holds without it.
    pub spec: InSpec,
    /// How it is written, as the table's first cell shows it (Markdown).
    pub written: &'static str,
    /// What it takes (Markdown).
    pub value: &'static str,
    /// Its default (Markdown).
    pub default: &'static str,
    /// What it means (Markdown).
    pub meaning: &'static str,
}

/// How an attribute's value is written, which is how the macro reads it.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    /// A string literal: `name = "add"`.
    Text,
    /// A string literal or a list of them: `tags = ["math", "fast"]`.
    Texts,
    /// One word of a set, bare or quoted, `_` for `-`: `side_effects = write`.
    Word(WordSet),
    /// The attribute alone, or `= true` / `= false`: `blocking`.
    Flag,
    /// A flag, or a string literal instead: `deprecated = "use add2"`.
    FlagOrText,
    /// A flag, or the path of a function instead: `needs_approval = is_large`.
    FlagOrPath,
    /// A whole number no larger than `max`: `timeout_ms = 500`.
    Whole {
        /// The largest value the spec's field holds.
        max: u64,
    },
    /// A decimal number as a string, never a float: `cost_estimate = "0.25"`.
    Decimal,
    /// A JSON Schema object as a string: `input_schema = r#"{...}"#`.
    Schema,
    /// A list of JSON strings, each an input or an (input, output) pair.
    Examples,
    /// Descriptions by parameter name: `params(a = "...", b = "...")`.
    Params,
    /// A Rust path as a string: `crate = "::my_framework::tackle"`.
    Path,
}

/// Where a tool's static spec holds an attribute, and what it holds without it.
#[derive(Clone, Copy, Debug)]
pub enum InSpec {
    /// Nowhere: the attribute shapes the expansion itself (schemas, examples,
    /// parameter descriptions, the crate's path).
    No,
    /// The field of this name: what was written, or when the attribute is absent its
    /// form's nothing (`None`, `false`, `&[]`).
    Field(&'static str),
    /// The field of this name: what was written; a tool without it does not compile.
    Required(&'static str),
    /// The field of this name: the word written, or this default word.
    WordOr(&'static str, &'static str),
    /// A field of the tool's identity, always filled: what was written, or what the
    /// macro finds (the function's name, the crate's, the doc comment's first
    /// paragraph).
    Settled(Settled),
    /// A flag field (`flag`), and a field (`value`) for the value the attribute may take
    /// instead of a flag; when that value is given the flag is `set`.
    FlagAnd {
        /// The flag's field.
        flag: &'static str,
        /// The field of the value given instead of a flag.
        value: &'static str,
        /// The flag when the value is given.
        set: bool,
    },
}

/// The fields of a tool's identity that the macro settles when their attribute is
/// absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// `name`: the function's name.
    Name,
    /// `namespace`: the crate's name.
    Namespace,
    /// `version`: `"1"`.
    Version,
    /// `description`: the doc comment's first paragraph.
    Description,
}

impl Settled {
    /// The static spec's field.
    pub const fn field(self) -> &'static str {
        match self {
            Settled::Name => "name",
            Settled::Namespace => "namespace",
            Settled::Version => "version",
            Settled::Description => "description",
        }
    }
}

/// Every attribute of `#[tool]`, in the order of the reference table in
/// `docs/macro.md`, which is made from this list (a test of this crate checks that the
/// table is this list, row by row).
pub const ATTRIBUTES: &[Attribute] = &[
    attr::SIDE_EFFECTS,
    attr::NAME,
    attr::NAMESPACE,
    attr::VERSION,
    attr::DESCRIPTION,
    attr::REPLAY_POLICY,
    attr::REQUIRES_CAPABILITY,
    attr::IDEMPOTENCY_KEY,
    attr::COST_ESTIMATE,
    attr::TAGS,
    attr::EXAMPLES,
    attr::DEPRECATED,
    attr::INPUT_SCHEMA,
    attr::OUTPUT_SCHEMA,
    attr::EXECUTION_MODE,
    attr::NEEDS_APPROVAL,
    attr::TIMEOUT_MS,
    attr::MAX_RESULT_TOKENS,
    attr::RESULT_SHAPING,
    attr::SECRETS,
    attr::TRUST,
    attr::BLOCKING,
    attr::SENSITIVITY,
    attr::PREFERRED_MODEL,
    attr::DEFER_LOADING,
    attr::REVEALS_SECRETS,
    attr::SANDBOX,
    attr::PARAMS,
    attr::CRATE,
];

/// The attribute with this name, if `#[tool]` has one.
pub fn attribute(name: &str) -> Option<&'static Attribute> {
    ATTRIBUTES.iter().find(|a| a.name == name)
}

/// The reference table of `docs/macro.md`'s "Attributes" section: its header and a
/// row per attribute of [`ATTRIBUTES`].
pub fn reference_table() -> String {
    let mut table = String::from("| attribute | value | default | meaning |\n|---|---|---|---|\n");
    for a in ATTRIBUTES {
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            a.written, a.value, a.default, a.meaning
        ));
    }
    table
}

/// Whether two strings are equal, in a `const` context.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A word that names no value of an enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWord {
    /// What the word should have named, e.g. `side effects`.
    pub what: &'static str,
    /// The word as given.
    pub word: String,
    /// The words that are known.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} `{}`; expected one of: {}",
            self.what,
            self.word,
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownWord {}

/// The words of one enum, as an attribute's [`Form`] names them: what the macro needs
/// to read an attribute's word and write it into an expansion, without the enum.
#[derive(Clone, Copy, Debug)]
pub struct WordSet {
    /// The enum's name, as the runtime re-exports it (`SideEffects`).
    pub type_name: &'static str,
    /// Every value's word, in declaration order.
    pub words: &'static [&'static str],
    /// The word a word or an alias names.
    parse: fn(&str) -> Option<&'static str>,
}

impl WordSet {
    /// The word an attribute's spelling names (`_` allowed for `-`, aliases read).
    pub fn from_attribute(&self, spelling: &str) -> Option<&'static str> {
        (self.parse)(&spelling.replace('_', "-"))
    }

    /// How an attribute spells each word: the word with `_` for `-`.
    pub fn attribute_spellings(&self) -> Vec<String> {
        self.words.iter().map(|w| w.replace('-', "_")).collect()
    }
}

/// An enum whose values are words: what the macro needs to check an attribute and
/// write its value into an expansion.
pub trait Words: Copy + Sized + 'static {
    /// The type's name, as the runtime re-exports it.
    const TYPE_NAME: &'static str;
    /// The type's words, as an attribute's form names them.
    const SET: WordSet;
    /// Every value, in declaration order.
    const ALL: &'static [Self];
    /// The value's word.
    fn word(self) -> &'static str;
    /// The value an attribute spelling names (`_` allowed for `-`).
    fn from_attribute(spelling: &str) -> Option<Self>;
    /// How an attribute spells the value.
    fn attribute_spelling(self) -> String;
}

/// Defines an enum whose values are words: the one table of its words, the
/// conversions both ways (one usable at compile time), and serde by word.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
        $( aliases { $( $alias:literal => $aliased:ident, )+ } )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Every value's word, in declaration order.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The word for this value, as in specs, cassettes and logs.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }

            /// Other words read as values (never written): the names another
            /// specification gives the same values.
            pub const ALIASES: &'static [(&'static str, $name)] = &[$($( ($alias, $name::$aliased) ),+)?];

            /// The value a word (or an alias) names, if any.
            pub const fn parse(word: &str) -> Option<$name> {
                $( if same(word, $word) { return Some($name::$variant); } )+
                let mut i = 0;
                while i < $name::ALIASES.len() {
                    if same(word, $name::ALIASES[i].0) {
                        return Some($name::ALIASES[i].1);
                    }
                    i += 1;
                }
                None
            }

            /// The value a word names. Used in `#[tool]` expansions inside `static`s,
            /// where it runs at compile time: an unknown word (a macro and runtime of
            /// different versions) stops the build instead of reaching run time.
            pub const fn expect(word: &str) -> $name {
                match $name::parse(word) {
                    Some(value) => value,
                    None => panic!(concat!("not a word of ", stringify!($name))),
                }
            }

            /// The value an attribute names: the word, with `_` allowed for `-`
            /// (`must_stub` for `must-stub`), as Rust identifiers cannot hold `-`.
            pub fn from_attribute(spelling: &str) -> Option<$name> {
                $name::parse(&spelling.replace('_', "-"))
            }

            /// How an attribute spells this value: the word with `_` for `-`.
            pub fn attribute_spelling(self) -> String {
                self.as_str().replace('-', "_")
            }
        }

        impl $name {
            /// The type's words, as an attribute's form names them.
            pub const SET: WordSet = WordSet {
                type_name: stringify!($name),
                words: $name::WORDS,
                parse: |word| $name::parse(word).map($name::as_str),
            };
        }

        impl Words for $name {
            const TYPE_NAME: &'static str = stringify!($name);
            const SET: WordSet = $name::SET;
            const ALL: &'static [$name] = $name::ALL;
            fn word(self) -> &'static str {
                self.as_str()
            }
            fn from_attribute(spelling: &str) -> Option<$name> {
                $name::from_attribute(spelling)
            }
            fn attribute_spelling(self) -> String {
                $name::attribute_spelling(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<$name, UnknownWord> {
                $name::parse(s).ok_or_else(|| UnknownWord {
                    what: $what,
                    word: s.to_owned(),
                    expected: $name::WORDS,
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "one of: {}", $name::WORDS.join(", "))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::parse(v).ok_or_else(|| E::unknown_variant(v, $name::WORDS))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }
    };
}

words! {
    /// What calling a tool does to the world outside the process.
    #[derive(PartialOrd, Ord)]
    pub enum SideEffects ("side effects") {
        /// A pure computation: same input, same output, nothing touched.
        None = "none",
        /// Reads outside state (files, databases, the network) but changes nothing.
        Read = "read",
        /// Changes state this system owns (files, rows, caches).
        Write = "write",
        /// Acts on a system outside this one (sends mail, pays, calls a model).
        External = "external",
    }
    // Graphorin's side-effect classes (seed 003), read as Stargraph's four (seed 000).
    aliases {
        "pure" => None,
        "read-only" => Read,
        "side-effecting" => Write,
        "external-stateful" => External,
    }
}

impl SideEffects {
    /// Whether the tool changes anything (`write` or `external`).
    pub const fn mutates(self) -> bool {
        matches!(self, SideEffects::Write | SideEffects::External)
    }
}

words! {
    /// What replay does with a tool's calls (see the replay table in the design notes).
    pub enum ReplayPolicy ("replay policy") {
        /// Replay must serve a recorded result; a miss is an error and the tool never runs.
        MustStub = "must-stub",
        /// Replaying this tool is an error before any lookup; it never runs under replay.
        FailLoud = "fail-loud",
        /// Replay serves a recorded result when there is one, else runs the tool.
        RecordedResult = "recorded-result",
    }
}

impl ReplayPolicy {
    /// The policy a tool gets when it does not choose one: the one place this mapping
    /// lives. Pure and read-only tools may run again on a miss (`recorded-result`);
    /// anything that changes the world must be stubbed (`must-stub`).
    pub const fn default_for(side_effects: SideEffects) -> ReplayPolicy {
        if side_effects.mutates() {
            ReplayPolicy::MustStub
        } else {
            ReplayPolicy::RecordedResult
        }
    }

    /// Whether a tool with these side effects may use this policy. `recorded-result`
    /// would re-run a write or external tool on a replay miss, so it is refused there.
    pub const fn allowed_for(self, side_effects: SideEffects) -> bool {
        !(matches!(self, ReplayPolicy::RecordedResult) && side_effects.mutates())
    }
}

words! {
    /// How the executor may schedule a tool relative to other calls of the same batch.
    #[derive(Default)]
    pub enum ExecutionMode ("execution mode") {
        /// Decided by the side effects: `none` and `read` tools run in parallel, `write`
        /// and `external` tools one at a time, in call order.
        #[default]
        Auto = "auto",
        /// Runs alongside other calls whatever its side effects (the tool opts in).
        Parallel = "parallel",
        /// Runs alone: no other call of the batch runs at the same time.
        Sequential = "sequential",
    }
}

words! {
    /// What the door does with a result longer than the tool's `max_result_tokens`.
    ///
    /// Lengths are estimated at four characters a token. Every strategy but
    /// `spill-to-file` leaves a marker saying how much was left out.
    #[derive(Default)]
    pub enum ResultShaping ("result shaping") {
        /// Keeps the beginning and the end and drops the middle.
        #[default]
        Middle = "middle",
        /// Keeps the beginning and drops the tail.
        Tail = "tail",
        /// Writes the whole result to a file (mode 0600) in a per-run directory; the
        /// result becomes a handle to it with a short preview.
        SpillToFile = "spill-to-file",
        /// Asks the runtime's summarizer hook for a summary within the limit.
        Summarize = "summarize",
    }
}

/// The longest result, in estimated tokens, before the door shapes it, for a tool that
/// does not set `max_result_tokens`: 16384. A tool that sets `0` is never shaped.
pub const DEFAULT_MAX_RESULT_TOKENS: u32 = 16384;

impl ResultShaping {
    /// The strategy of a tool that does not choose one, by the tool's name: `tail` for
    /// `code_execution` (the start of a program's output says most), `summarize` for
    /// `web_search`, `middle` for every other tool.
    pub const fn default_for_tool(name: &str) -> ResultShaping {
        if same(name, "code_execution") {
            ResultShaping::Tail
        } else if same(name, "web_search") {
            ResultShaping::Summarize
        } else {
            ResultShaping::Middle
        }
    }
}

words! {
    /// How sensitive a tool's results are. Spilled results carry it to the spill
    /// writer, and the door's span records it; `secret` results are never spilled.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Sensitivity ("sensitivity") {
        /// Anyone may see it.
        Public = "public",
        /// For the operator's own people and systems.
        #[default]
        Internal = "internal",
        /// For those who need it.
        Confidential = "confidential",
        /// Never written outside the process.
        Secret = "secret",
    }
}

words! {
    /// Where a tool runs: in the program's process, or in a child process of its own
    /// that the door can limit and kill (see the runtime's `sandbox` module).
    #[derive(Default)]
    pub enum SandboxKind ("sandbox") {
        /// In the program's process, like any function (the default).
        #[default]
        InProcess = "in-process",
        /// In a child process of the same program, with a cleared environment, CPU-time
        /// and memory limits, no network where the platform allows it, and a hard kill
        /// on timeout or cancellation.
        Process = "process",
    }
}

words! {
    /// A cost tier a tool may prefer its model from: cheaper and quicker, to smarter.
    pub enum ModelHint ("model hint") {
        /// The quickest, cheapest model.
        Fast = "fast",
        /// The middle ground.
        Balanced = "balanced",
        /// The most capable model.
        Smart = "smart",
    }
}

words! {
    /// Where a tool comes from, in increasing order of trust. Used by the `priority`
    /// collision strategy and by result sanitization.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Trust ("trust") {
        /// Imported from an MCP server.
        Mcp = "mcp",
        /// Third-party code or data that is not vetted.
        Untrusted = "untrusted",
        /// Third-party code the operator vouches for.
        Trusted = "trusted",
        /// Written in this program.
        #[default]
        FirstParty = "first-party",
    }
    aliases {
        "trusted-skill" => Trusted,
        "untrusted-skill" => Untrusted,
    }
}

/// The characters a name or a namespace segment may hold, in words.
pub const NAME_CHARACTERS: &str = "ASCII letters, digits, `_` and `-`";

/// The characters a version may hold, in words.
pub const VERSION_CHARACTERS: &str = "ASCII letters, digits, `.`, `_`, `-` and `+`";

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `text` as a tool name or namespace segment: each character outside
/// [`NAME_CHARACTERS`] becomes `_` (an empty text, `_`). A valid name comes back as
/// it is.
pub fn name_from(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .collect();
    if name.is_empty() {
        "_".to_owned()
    } else {
        name
    }
}

fn version_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')
}

/// Whether `s` is a valid tool name or namespace segment: non-empty,
/// [`NAME_CHARACTERS`] only.
pub fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(name_char)
}

/// Whether `s` is a valid namespace: dot-separated valid segments.
pub fn is_namespace(s: &str) -> bool {
    s.split('.').all(is_name)
}

/// Whether `s` is a valid version: non-empty, [`VERSION_CHARACTERS`] only.
pub fn is_version(s: &str) -> bool {
    !s.is_empty() && s.chars().all(version_char)
}

/// Checks one name or namespace segment; the error says which character is wrong.
pub fn check_name(what: &str, s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    match s.chars().find(|c| !name_char(*c)) {
        Some(c) => Err(format!(
            "the {what} `{s}` has the character {c:?}; use {NAME_CHARACTERS}"
        )),
        None => Ok(()),
    }
}

/// Checks a version; the error says which character is wrong.
pub fn check_version(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("the version is empty".into());
    }
    match s.chars().find(|c| !version_char(*c)) {
        Some(c) => Err(format!(
            "the version `{s}` has the character {c:?}; use {VERSION_CHARACTERS}"
        )),
        None => Ok(()),
    }
}

/// The words that make a parameter secret by its name unless told otherwise
/// ([`is_secret_name`]): `api_key`, `password`, `token`, `secret`, `authorization`
/// and their kin.
pub const SECRET_WORDS: &[&str] = &[
    "apikey",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "credential",
    "credentials",
    "privatekey",
];

/// Whether a parameter named `name` holds a secret by its name: its last word, or its
/// last two words joined, is one of `words` (compared in lower case). Words are split
/// at `_`, `-`, `.`, spaces and lower-to-upper case changes, so `api_key`, `apiKey`,
/// `X-Api-Key`, `access_token`, `client_secret` and `db_password` are secret, and
/// `max_tokens`, `token_count` and `password_hint` are not.
pub fn is_secret_name<W: AsRef<str>>(name: &str, words: &[W]) -> bool {
    let separator = |c: char| matches!(c, '_' | '-' | '.' | ' ');
    // The byte spans of the last two words: no allocation, as the door asks this of
    // an open input's every key.
    let mut previous: Option<(usize, usize)> = None;
    let mut last: Option<(usize, usize)> = None;
    let mut start: Option<usize> = None;
    let mut previous_lower = false;
    for (i, c) in name.char_indices() {
        if separator(c) || (c.is_uppercase() && previous_lower) {
            if let Some(begun) = start.take() {
                previous = last;
                last = Some((begun, i));
            }
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        if !separator(c) && start.is_none() {
            start = Some(i);
        }
    }
    if let Some(begun) = start {
        previous = last;
        last = Some((begun, name.len()));
    }
    let Some((from, to)) = last else {
        return false;
    };
    let last = &name[from..to];
    let previous = previous.map(|(from, to)| &name[from..to]);
    words.iter().any(|w| {
        let w = w.as_ref();
        w.eq_ignore_ascii_case(last)
            || previous.is_some_and(|p| {
                w.len() == p.len() + last.len()
                    && w.is_char_boundary(p.len())
                    && w[..p.len()].eq_ignore_ascii_case(p)
                    && w[p.len()..].eq_ignore_ascii_case(last)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_is_described_once() {
        let names: Vec<&str> = ATTRIBUTES.iter().map(|a| a.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "an attribute described twice");
        for a in ATTRIBUTES {
            assert!(a.written.starts_with(&format!("`{}", a.name)), "{a:?}");
        }
    }

    /// The reference table in `docs/macro.md` is made from [`ATTRIBUTES`]: after a
    /// change here, write it with `TACKLE_BLESS=1 cargo test -p tackle-contract`.
    #[test]
    fn the_reference_table_is_the_attributes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/macro.md");
        let doc = std::fs::read_to_string(&path).expect("docs/macro.md");
        let header = "| attribute | value | default | meaning |";
        let start = doc.find(header).expect("the table's header");
        let end = doc[start..]
            .find("\n\n")
            .map_or(doc.len(), |at| start + at + 1);
        let expected = reference_table();
        if doc[start..end] != expected && std::env::var_os("TACKLE_BLESS").is_some() {
            let written = format!("{}{}{}", &doc[..start], expected, &doc[end..]);
            std::fs::write(&path, written).expect("write docs/macro.md");
            return;
        }
        assert_eq!(
            doc[start..end],
            expected,
            "docs/macro.md's attribute table is not ATTRIBUTES: run TACKLE_BLESS=1 cargo test -p tackle-contract"
        );
    }

    #[test]
    fn trust_reads_graphorins_words() {
        assert_eq!(Trust::parse("trusted-skill"), Some(Trust::Trusted));
        assert_eq!(Trust::parse("untrusted-skill"), Some(Trust::Untrusted));
        assert_eq!(Trust::Trusted.as_str(), "trusted");
        assert!(Trust::FirstParty > Trust::Trusted && Trust::Untrusted > Trust::Mcp);
    }

    #[test]
    fn words_round_trip_every_way() {
        for value in ReplayPolicy::ALL {
            assert_eq!(ReplayPolicy::parse(value.as_str()), Some(*value));
            assert_eq!(
                ReplayPolicy::from_attribute(&value.attribute_spelling()),
                Some(*value)
            );
            let json = serde_json::to_value(value).unwrap();
            assert_eq!(json, value.as_str());
            assert_eq!(
                serde_json::from_value::<ReplayPolicy>(json).unwrap(),
                *value
            );
        }
        assert_eq!(
            ResultShaping::SpillToFile.attribute_spelling(),
            "spill_to_file"
        );
        assert_eq!(
            Trust::from_attribute("first_party"),
            Some(Trust::FirstParty)
        );
        assert_eq!(SideEffects::WORDS, ["none", "read", "write", "external"]);
    }

    #[test]
    fn graphorin_side_effect_classes_are_aliases() {
        for (alias, value) in [
            ("pure", SideEffects::None),
            ("read-only", SideEffects::Read),
            ("side-effecting", SideEffects::Write),
            ("external-stateful", SideEffects::External),
        ] {
            assert_eq!(alias.parse::<SideEffects>().unwrap(), value);
            let json = serde_json::json!(alias);
            assert_eq!(serde_json::from_value::<SideEffects>(json).unwrap(), value);
            assert_eq!(
                SideEffects::from_attribute(&alias.replace('-', "_")),
                Some(value)
            );
            // Written as seed 000's word.
            assert_eq!(serde_json::to_value(value).unwrap(), value.as_str());
        }
    }

    #[test]
    fn words_are_usable_at_compile_time() {
        const WRITE: SideEffects = SideEffects::expect("write");
        assert_eq!(WRITE, SideEffects::Write);
        assert_eq!(SideEffects::parse("writes"), None);
    }

    #[test]
    fn unknown_words_name_the_known_ones() {
        let err = "stub".parse::<ReplayPolicy>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown replay policy `stub`; expected one of: must-stub, fail-loud, recorded-result"
        );
        let err = serde_json::from_value::<SideEffects>(serde_json::json!("writes"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `writes`"), "{err}");
    }

    #[test]
    fn policy_follows_side_effects() {
        assert_eq!(
            ReplayPolicy::default_for(SideEffects::Read),
            ReplayPolicy::RecordedResult
        );
        assert_eq!(
            ReplayPolicy::default_for(SideEffects::External),
            ReplayPolicy::MustStub
        );
        assert!(!ReplayPolicy::RecordedResult.allowed_for(SideEffects::Write));
        assert!(ReplayPolicy::FailLoud.allowed_for(SideEffects::Write));
    }

    #[test]
    fn names_and_versions() {
        assert!(is_name("add_2-x") && !is_name("a.b") && !is_name(""));
        assert!(is_namespace("llm.openai") && !is_namespace("llm..openai"));
        assert!(is_version("2.1.0-rc.1+build") && !is_version("1 0"));
        assert!(check_name("name", "a.b").unwrap_err().contains("'.'"));
        assert!(check_version("1 0").unwrap_err().contains("' '"));
    }

    #[test]
    fn a_words_default_in_the_spec_is_its_types_default() {
        fn default_of(set: &WordSet) -> &'static str {
            match set.type_name {
                "ExecutionMode" => ExecutionMode::default().as_str(),
                "Trust" => Trust::default().as_str(),
                "Sensitivity" => Sensitivity::default().as_str(),
                "SandboxKind" => SandboxKind::default().as_str(),
                other => panic!("{other} has no default"),
            }
        }
        let mut defaulted = 0;
        for a in ATTRIBUTES {
            if let InSpec::WordOr(_, word) = a.spec {
                let Form::Word(set) = a.form else {
                    panic!("{}: a default word for a form with no words", a.name)
                };
                assert_eq!(word, default_of(&set), "{}", a.name);
                assert_eq!(set.from_attribute(word), Some(word), "{}", a.name);
                defaulted += 1;
            }
        }
        assert_eq!(defaulted, 4);
    }

    /// The table's cells that the definition also states: a word attribute's value
    /// cell lists its words (as attributes spell them), a default word's cell is that
    /// word, and an attribute the spec holds as a flag defaults to false.
    #[test]
    fn the_tables_cells_agree_with_the_forms() {
        let cells = |text: &str| -> Vec<String> {
            let mut words: Vec<String> = text
                .split(r"\|")
                .map(|w| w.trim().trim_matches('`').to_owned())
                .collect();
            words.sort();
            words
        };
        for a in ATTRIBUTES {
            if let Form::Word(set) = a.form {
                let mut spellings = set.attribute_spellings();
                spellings.sort();
                assert_eq!(cells(a.value), spellings, "{}: the value cell", a.name);
            }
            if let InSpec::WordOr(_, word) = a.spec {
                assert_eq!(
                    a.default,
                    format!("`{}`", word.replace('-', "_")),
                    "{}: the default cell",
                    a.name
                );
            }
            if matches!(a.form, Form::Flag) {
                assert_eq!(a.default, "false", "{}: the default cell", a.name);
            }
        }
    }

    #[test]
    fn a_word_set_reads_spellings_and_aliases() {
        assert_eq!(SideEffects::SET.from_attribute("read_only"), Some("read"));
        assert_eq!(
            ReplayPolicy::SET.from_attribute("must_stub"),
            Some("must-stub")
        );
        assert_eq!(ReplayPolicy::SET.from_attribute("stub"), None);
        assert_eq!(
            ResultShaping::SET.attribute_spellings(),
            ["middle", "tail", "spill_to_file", "summarize"]
        );
    }

    #[test]
    fn secret_names_by_their_last_words() {
        for name in [
            "api_key",
            "apiKey",
            "X-Api-Key",
            "apikey",
            "access_token",
            "client_secret",
            "db_password",
            "Authorization",
            "token",
            "private_key",
            "credentials",
        ] {
            assert!(is_secret_name(name, SECRET_WORDS), "{name}");
        }
        for name in [
            "max_tokens",
            "token_count",
            "password_hint",
            "key",
            "monkey",
            "",
            "_",
        ] {
            assert!(!is_secret_name(name, SECRET_WORDS), "{name}");
        }
        assert!(
            is_secret_name("pin", &["pin"]),
            "the words are configurable"
        );
    }
}
