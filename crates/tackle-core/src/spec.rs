//! The tool specification: what a tool is, as plain, portable data.
//!
//! A [`ToolSpec`] is the single source of truth about a tool: the registry, the call
//! door, provider exports and the MCP bridge all read it, and nothing else. It is an
//! ordinary serde type that round-trips through JSON and rejects unknown fields, so a
//! spec can be written by hand, stored, diffed and shipped to other languages.
//!
//! Two classifications drive the runtime's behaviour:
//!
//! * [`SideEffects`] says what calling the tool does to the world
//!   (`none | read | write | external`);
//! * [`ReplayPolicy`] says what replay does with it
//!   (`must-stub | fail-loud | recorded-result`). When a tool does not choose one, the
//!   policy is derived from its side effects by [`ReplayPolicy::default_for`], the one
//!   place that mapping lives.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use tackle_contract::{
    check_name, check_version, name_from, ExecutionMode, ModelHint, ReplayPolicy, ResultShaping,
    SandboxKind, Sensitivity, SideEffects, Trust, UnknownWord, DEFAULT_MAX_RESULT_TOKENS,
};

/// The model a tool prefers for the step that calls it: a cost tier (`fast`,
/// `balanced`, `smart`) or a model by name. A named model wins over a tier.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PreferredModel {
    /// A cost tier.
    Hint(ModelHint),
    /// A model by name (`provider/model` or the model alone).
    Model(String),
}

impl PreferredModel {
    /// A tier if `text` is one's word, else a model's name.
    pub fn parse(text: &str) -> PreferredModel {
        ModelHint::parse(text).map_or_else(
            || PreferredModel::Model(text.to_owned()),
            PreferredModel::Hint,
        )
    }
}

/// One example call of a tool: an input and, optionally, the output it gives.
/// Examples are validated against the tool's schemas when the registry is built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolExample {
    /// The input object.
    pub input: Value,
    /// The output that input gives, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// Everything the runtime knows about a tool. See the [module docs](self).
///
/// On the wire it is the seed's `ToolSpec` (Stargraph): its fourteen fields are always
/// written (tackle's own settings only when they differ from their defaults), the
/// permissions are `permissions` (`requires_capability`, the decorator's name, is read
/// too), and a spec without `replay_policy` takes the default for its side effects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, from = "wire::SpecWire")]
pub struct ToolSpec {
    /// The tool's name within its namespace (letters, digits, `_`, `-`).
    pub name: String,
    /// Dot-separated namespace segments (letters, digits, `_`, `-`).
    pub namespace: String,
    /// The version, for example `1` or `2.1.0` (letters, digits, `.`, `_`, `-`, `+`).
    pub version: String,
    /// What the tool does, for a model choosing between tools.
    pub description: String,
    /// What calling the tool does to the world.
    pub side_effects: SideEffects,
    /// What replay does with the tool's calls.
    pub replay_policy: ReplayPolicy,
    /// Permissions the caller must hold, every one of them (the `#[tool]` attribute
    /// `requires_capability`).
    #[serde(default)]
    pub permissions: Vec<String>,
    /// JSON Schema (2020-12) of the input object.
    pub input_schema: Value,
    /// JSON Schema (2020-12) of the output value.
    pub output_schema: Value,
    /// The input field whose value identifies a call for deduplication.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Estimated cost of one call, as an exact decimal (serialized as a string).
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cost_estimate: Option<Decimal>,
    /// Free-form labels for search and grouping.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example calls.
    #[serde(default)]
    pub examples: Vec<ToolExample>,
    /// Whether the tool is deprecated (hidden from search unless asked for).
    #[serde(default)]
    pub deprecated: bool,
    /// Why it is deprecated, or what to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_note: Option<String>,
    /// How the executor may schedule the tool.
    #[serde(default, skip_serializing_if = "is_default")]
    pub execution_mode: ExecutionMode,
    /// Whether every call must be approved before it runs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub needs_approval: bool,
    /// Per-call time limit in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Longest result, in estimated tokens, before the door shapes it: unset is
    /// [`DEFAULT_MAX_RESULT_TOKENS`] (16384), `0` disables shaping (the registry warns
    /// once per tool). See [`result_token_limit`](Self::result_token_limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_tokens: Option<u32>,
    /// How a result longer than the limit is shaped: unset is the default for the
    /// tool's name ([`ResultShaping::default_for_tool`]: `tail` for `code_execution`,
    /// `summarize` for `web_search`, `middle` otherwise). See
    /// [`shaping`](Self::shaping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_shaping: Option<ResultShaping>,
    /// Names of the secrets the tool may read with `ToolContext::secret`; any other
    /// is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Where the tool comes from.
    #[serde(default, skip_serializing_if = "is_default")]
    pub trust: Trust,
    /// A synchronous tool that blocks: it runs on a blocking thread, off the async workers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub blocking: bool,
    /// How sensitive its results are (default `internal`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sensitivity: Sensitivity,
    /// The model it prefers for the step that calls it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_model: Option<PreferredModel>,
    /// Whether a ReAct run leaves it out of the tools offered up front; the model
    /// finds it with `tool_search`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
    /// Whether the tool's output may hold the caller's secrets on purpose (a tool that
    /// hands out a credential). Otherwise the door replaces every secret value of the
    /// caller's context found in the output with `[REDACTED]` before anything sees it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reveals_secrets: bool,
    /// Where the tool runs (default `in-process`); the runtime's sandbox resolver may
    /// choose otherwise (see [`crate::sandbox`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sandbox: SandboxKind,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

impl ToolSpec {
    /// Whether a call of this tool may run a second time when nobody knows if the
    /// first ran: it changes nothing (side effects `none` or `read`), or its input
    /// carries an idempotency key, which the service it calls uses to ignore a repeat.
    /// A durable run re-runs only such a call after a crash.
    pub fn rerun_safe(&self) -> bool {
        !self.side_effects.mutates() || self.idempotency_key.is_some()
    }

    /// A spec with the required fields, an empty input object, any output, and the
    /// replay policy derived from `side_effects`. Set the other public fields as needed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tackle::{spec::ReplayPolicy, SideEffects, ToolSpec};
    ///
    /// let mut spec = ToolSpec::new("mail", "send", "1", SideEffects::External, "Sends mail.");
    /// spec.permissions = vec!["mail:send".into()];
    /// assert_eq!(spec.key(), "mail.send@1");
    /// assert_eq!(spec.replay_policy, ReplayPolicy::MustStub); // from the side effects
    /// let wire = serde_json::to_value(&spec)?;
    /// assert_eq!(wire["side_effects"], json!("external"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        version: impl Into<String>,
        side_effects: SideEffects,
        description: impl Into<String>,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            namespace: namespace.into(),
            version: version.into(),
            description: description.into(),
            side_effects,
            replay_policy: ReplayPolicy::default_for(side_effects),
            permissions: Vec::new(),
            input_schema: serde_json::json!({"type": "object", "properties": {}, "required": []}),
            output_schema: Value::Bool(true),
            idempotency_key: None,
            cost_estimate: None,
            tags: Vec::new(),
            examples: Vec::new(),
            deprecated: false,
            deprecation_note: None,
            execution_mode: ExecutionMode::Auto,
            needs_approval: false,
            timeout_ms: None,
            max_result_tokens: None,
            result_shaping: None,
            secrets: Vec::new(),
            trust: Trust::FirstParty,
            blocking: false,
            sensitivity: Sensitivity::Internal,
            preferred_model: None,
            defer_loading: false,
            reveals_secrets: false,
            sandbox: SandboxKind::InProcess,
        }
    }

    /// The limit the door shapes results to: `max_result_tokens`, or
    /// [`DEFAULT_MAX_RESULT_TOKENS`] when unset; `None` when set to `0` (disabled).
    pub fn result_token_limit(&self) -> Option<u32> {
        match self.max_result_tokens {
            None => Some(DEFAULT_MAX_RESULT_TOKENS),
            Some(0) => None,
            Some(n) => Some(n),
        }
    }

    /// The strategy a long result is shaped by: `result_shaping`, or the default for
    /// the tool's name.
    pub fn shaping(&self) -> ResultShaping {
        self.result_shaping
            .unwrap_or(ResultShaping::default_for_tool(&self.name))
    }

    /// The registry key, `namespace.name@version`.
    pub fn key(&self) -> String {
        format!("{}.{}@{}", self.namespace, self.name, self.version)
    }

    /// `namespace.name`, the key without its version.
    pub fn path(&self) -> String {
        format!("{}.{}", self.namespace, self.name)
    }

    /// Checks the parts of the spec that do not need schemas: name, namespace and
    /// version characters, a description, permissions, and the replay policy against
    /// the side effects. Returns the first problem as a sentence.
    pub fn check(&self) -> Result<(), String> {
        check_name("name", &self.name)?;
        for segment in self.namespace.split('.') {
            check_name("namespace", segment)
                .map_err(|e| format!("{e} (in `{}`)", self.namespace))?;
        }
        check_version(&self.version)?;
        if self.description.trim().is_empty() {
            return Err("the description is empty: say what the tool does".into());
        }
        if let Some(p) = self.permissions.iter().find(|p| p.trim().is_empty()) {
            return Err(format!("permissions has an empty permission `{p}`"));
        }
        if !self.replay_policy.allowed_for(self.side_effects) {
            return Err(format!(
                "replay_policy `{}` is not allowed on a `{}` tool: replay would run it again; use `must-stub` or `fail-loud`",
                self.replay_policy, self.side_effects
            ));
        }
        Ok(())
    }
}

/// The spec as it is read: the seed's field names and defaults, then the spec.
mod wire {
    use rust_decimal::Decimal;
    use serde::Deserialize;
    use serde_json::Value;

    use super::{
        ExecutionMode, PreferredModel, ReplayPolicy, ResultShaping, SandboxKind, Sensitivity,
        SideEffects, ToolExample, ToolSpec, Trust,
    };

    /// A list of strings, or one string as a list of one (the seed's
    /// `requires_capability: str | list[str] | None`), or `null` as none.
    fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        Ok(match Option::<OneOrMany>::deserialize(d)? {
            None => Vec::new(),
            Some(OneOrMany::One(one)) => vec![one],
            Some(OneOrMany::Many(many)) => many,
        })
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct SpecWire {
        name: String,
        namespace: String,
        version: String,
        description: String,
        side_effects: SideEffects,
        // Absent: the default for the side effects.
        #[serde(default)]
        replay_policy: Option<ReplayPolicy>,
        #[serde(
            default,
            alias = "requires_capability",
            deserialize_with = "one_or_many"
        )]
        permissions: Vec<String>,
        input_schema: Value,
        output_schema: Value,
        #[serde(default)]
        idempotency_key: Option<String>,
        #[serde(default, with = "rust_decimal::serde::str_option")]
        cost_estimate: Option<Decimal>,
        #[serde(default)]
        tags: Vec<String>,
        #[serde(default)]
        examples: Vec<ToolExample>,
        #[serde(default)]
        deprecated: bool,
        #[serde(default)]
        deprecation_note: Option<String>,
        #[serde(default)]
        execution_mode: ExecutionMode,
        #[serde(default)]
        needs_approval: bool,
        #[serde(default)]
        timeout_ms: Option<u64>,
        #[serde(default)]
        max_result_tokens: Option<u32>,
        #[serde(default)]
        result_shaping: Option<ResultShaping>,
        #[serde(default)]
        secrets: Vec<String>,
        #[serde(default)]
        trust: Trust,
        #[serde(default)]
        blocking: bool,
        #[serde(default)]
        sensitivity: Sensitivity,
        #[serde(default)]
        preferred_model: Option<PreferredModel>,
        #[serde(default)]
        defer_loading: bool,
        #[serde(default)]
        reveals_secrets: bool,
        #[serde(default)]
        sandbox: SandboxKind,
    }

    impl From<SpecWire> for ToolSpec {
        fn from(w: SpecWire) -> ToolSpec {
            ToolSpec {
                replay_policy: w
                    .replay_policy
                    .unwrap_or(ReplayPolicy::default_for(w.side_effects)),
                name: w.name,
                namespace: w.namespace,
                version: w.version,
                description: w.description,
                side_effects: w.side_effects,
                permissions: w.permissions,
                input_schema: w.input_schema,
                output_schema: w.output_schema,
                idempotency_key: w.idempotency_key,
                cost_estimate: w.cost_estimate,
                tags: w.tags,
                examples: w.examples,
                deprecated: w.deprecated,
                deprecation_note: w.deprecation_note,
                execution_mode: w.execution_mode,
                needs_approval: w.needs_approval,
                timeout_ms: w.timeout_ms,
                max_result_tokens: w.max_result_tokens,
                result_shaping: w.result_shaping,
                secrets: w.secrets,
                trust: w.trust,
                blocking: w.blocking,
                sensitivity: w.sensitivity,
                preferred_model: w.preferred_model,
                defer_loading: w.defer_loading,
                reveals_secrets: w.reveals_secrets,
                sandbox: w.sandbox,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_result_refused_on_mutating_tools() {
        let mut spec = ToolSpec::new("mail", "send", "1", SideEffects::External, "Send mail.");
        spec.replay_policy = ReplayPolicy::RecordedResult;
        let err = spec.check().unwrap_err();
        assert!(err.contains("recorded-result"), "{err}");
        spec.replay_policy = ReplayPolicy::FailLoud;
        assert!(spec.check().is_ok());
    }

    #[test]
    fn names_and_versions_are_checked() {
        // The character rules themselves are tested where they live (tackle-contract).
        let mut spec = ToolSpec::new(
            "llm.openai",
            "complete",
            "gpt-4.1",
            SideEffects::External,
            "d",
        );
        assert!(spec.check().is_ok());
        spec.namespace = "llm..openai".into();
        assert!(spec.check().is_err());
    }

    #[test]
    fn enums_serialize_as_words() {
        assert_eq!(
            serde_json::to_value(SideEffects::External).unwrap(),
            "external"
        );
        assert_eq!(
            serde_json::to_value(ReplayPolicy::MustStub).unwrap(),
            "must-stub"
        );
        assert_eq!(
            serde_json::to_value(ReplayPolicy::FailLoud).unwrap(),
            "fail-loud"
        );
        assert_eq!(
            serde_json::to_value(ReplayPolicy::RecordedResult).unwrap(),
            "recorded-result"
        );
        assert_eq!(
            serde_json::to_value(Trust::FirstParty).unwrap(),
            "first-party"
        );
    }

    #[test]
    fn spec_round_trips_and_rejects_unknown_fields() {
        let mut spec = ToolSpec::new("shop", "buy", "2", SideEffects::External, "Buy a thing.");
        spec.cost_estimate = Some(Decimal::new(125, 3));
        spec.tags = vec!["shop".into()];
        spec.timeout_ms = Some(500);
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["cost_estimate"], "0.125");
        let back: ToolSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, spec);

        let mut extra = json.clone();
        extra["colour"] = "blue".into();
        let err = serde_json::from_value::<ToolSpec>(extra)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `colour`"), "{err}");

        let mut float = json;
        float["cost_estimate"] = serde_json::json!(0.125);
        assert!(
            serde_json::from_value::<ToolSpec>(float).is_err(),
            "a float cost must be refused"
        );
    }
}
