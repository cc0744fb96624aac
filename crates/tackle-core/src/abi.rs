//! The macro ABI: what `#[tool]` expansions register and call.
//!
//! Everything the macro's output refers to is here, and the facade re-exports this
//! module as `tackle::__private_0_1`: the registration types ([`ToolRegistration`],
//! [`StaticSpec`], [`RegisteredHandler`]), the helpers the generated handlers call
//! (decoding arguments, encoding outputs, resources, blocking work), and the types and
//! crates they name (`serde`, `schemars`, `serde_json`, `inventory`, the spec's enums).
//! Enum values reach an expansion as words from the contract crate's tables (see
//! `tackle_contract`), never as variant names. Not a public API: names and
//! signatures here change without notice.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::context::ToolContext;
pub use crate::error::ToolError;
pub use crate::schema::{input_schema, output_schema};
pub use crate::spec::{
    ExecutionMode, PreferredModel, ReplayPolicy, ResultShaping, SandboxKind, Sensitivity,
    SideEffects, ToolSpec, Trust,
};
pub use inventory;
pub use rust_decimal;
pub use schemars;
pub use serde;
pub use serde_json;

use crate::context::Resource;
use crate::error::panic_message;
use crate::schema::normalize_input_schema;
use crate::spec::ToolExample;
use crate::validate::ValidationIssue;

/// Makes a whole value the tool's input: a parameter `Args(q): Args<Q>` gives the tool
/// the input schema of `Q` itself, rather than one property per parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args<T>(pub T);

/// The future a tool handler returns: the tool's output as JSON, or why it failed.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// A `#[tool]` function's link-time registration. Made by the macro; not built by hand.
#[derive(Debug)]
pub struct ToolRegistration {
    pub(crate) key: &'static str,
    pub(crate) meta: &'static StaticSpec,
    pub(crate) spec: fn() -> ToolSpec,
    pub(crate) check_at_build: bool,
    pub(crate) handler: RegisteredHandler,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    pub(crate) module: &'static str,
}

impl ToolRegistration {
    /// Used by `#[tool]`'s expansion.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        key: &'static str,
        meta: &'static StaticSpec,
        spec: fn() -> ToolSpec,
        check_at_build: bool,
        handler: RegisteredHandler,
        file: &'static str,
        line: u32,
        module: &'static str,
    ) -> ToolRegistration {
        ToolRegistration {
            key,
            meta,
            spec,
            check_at_build,
            handler,
            file,
            line,
            module,
        }
    }

    /// The key the tool registers under.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Builds the tool's spec (schemas included).
    pub fn spec(&self) -> ToolSpec {
        (self.spec)()
    }

    /// The path of the module the tool was written in, as `module_path!()` gives it.
    pub fn module(&self) -> &'static str {
        self.module
    }

    /// Whether the tool was written in `module` or in a module inside it (`a::b` is
    /// in `a` and in `a::b`, not in `a::bc`).
    pub fn is_in(&self, module: &str) -> bool {
        match self.module.strip_prefix(module) {
            Some(rest) => rest.is_empty() || rest.starts_with("::"),
            None => false,
        }
    }
}

inventory::collect!(ToolRegistration);

/// Every `#[tool]` linked into the program, in a stable order (by key, then source
/// location). Filter it and pass it to [`Registry::from_registrations`] to build a
/// registry of a subset, for example the tools of one agent.
///
/// [`Registry::from_registrations`]: crate::Registry::from_registrations
pub fn registrations() -> impl Iterator<Item = &'static ToolRegistration> {
    let mut all: Vec<&'static ToolRegistration> =
        inventory::iter::<ToolRegistration>.into_iter().collect();
    // Link order is not stable across builds; sort so collisions resolve the same way.
    all.sort_by(|a, b| (a.key, a.file, a.line).cmp(&(b.key, b.file, b.line)));
    all.into_iter()
}

/// A `#[tool]` function's generated code, as the macro registers it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum RegisteredHandler {
    /// A synchronous tool that does not block: runs to completion where it is called,
    /// with no future to allocate.
    Sync(fn(&ToolContext, Value) -> Result<Value, ToolError>),
    /// An async (or blocking) tool.
    Async(fn(ToolContext, Value) -> ToolFuture),
}

/// The parts of a spec the macro knows at compile time.
#[derive(Debug)]
pub struct StaticSpec {
    pub name: &'static str,
    pub namespace: &'static str,
    pub version: &'static str,
    pub description: &'static str,
    pub side_effects: SideEffects,
    pub replay_policy: Option<ReplayPolicy>,
    pub permissions: &'static [&'static str],
    pub idempotency_key: Option<&'static str>,
    pub cost_estimate: Option<rust_decimal::Decimal>,
    pub tags: &'static [&'static str],
    pub deprecated: bool,
    pub deprecation_note: Option<&'static str>,
    pub execution_mode: ExecutionMode,
    pub needs_approval: bool,
    pub timeout_ms: Option<u64>,
    pub max_result_tokens: Option<u32>,
    pub result_shaping: Option<ResultShaping>,
    pub secrets: &'static [&'static str],
    pub approval_when: Option<fn(&Value) -> bool>,
    pub trust: Trust,
    pub blocking: bool,
    pub sensitivity: Sensitivity,
    pub preferred_model: Option<&'static str>,
    pub defer_loading: bool,
    pub reveals_secrets: bool,
    pub sandbox: SandboxKind,
    /// Whether the function takes the `ToolContext` (and so may stream, report
    /// progress or read secrets); the door gives other tools no per-call scope.
    pub uses_context: bool,
}

impl StaticSpec {
    /// The full spec, given the schemas and examples. A hand-written input schema is
    /// brought into canonical form; a derived one already is.
    pub fn build(
        &self,
        input_schema: Schema,
        output_schema: Value,
        examples: Vec<ToolExample>,
    ) -> ToolSpec {
        let input_schema = match input_schema {
            Schema::Derived(value) => value,
            Schema::Written(mut value) => {
                normalize_input_schema(&mut value);
                value
            }
        };
        let strings = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect();
        ToolSpec {
            name: self.name.to_owned(),
            namespace: self.namespace.to_owned(),
            version: self.version.to_owned(),
            description: self.description.to_owned(),
            side_effects: self.side_effects,
            replay_policy: self
                .replay_policy
                .unwrap_or(ReplayPolicy::default_for(self.side_effects)),
            permissions: strings(self.permissions),
            input_schema,
            output_schema,
            idempotency_key: self.idempotency_key.map(str::to_owned),
            cost_estimate: self.cost_estimate,
            tags: strings(self.tags),
            examples,
            deprecated: self.deprecated,
            deprecation_note: self.deprecation_note.map(str::to_owned),
            execution_mode: self.execution_mode,
            needs_approval: self.needs_approval,
            timeout_ms: self.timeout_ms,
            max_result_tokens: self.max_result_tokens,
            result_shaping: self.result_shaping,
            secrets: strings(self.secrets),
            trust: self.trust,
            blocking: self.blocking,
            sensitivity: self.sensitivity,
            preferred_model: self.preferred_model.map(PreferredModel::parse),
            defer_loading: self.defer_loading,
            reveals_secrets: self.reveals_secrets,
            sandbox: self.sandbox,
        }
    }
}

/// Where an input schema comes from.
#[derive(Debug)]
pub enum Schema {
    /// Derived from the parameters: already canonical.
    Derived(Value),
    /// Written in the attribute: normalized on build.
    Written(Value),
}

/// A JSON object from key-value pairs (for JSON literals the macro checked).
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<Map<_, _>>(),
    )
}

/// An example from its input and optional output.
pub fn example(input: Value, output: Option<Value>) -> ToolExample {
    ToolExample { input, output }
}

/// Decodes validated input into the tool's arguments.
pub fn decode_args<T: DeserializeOwned>(key: &'static str, input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::InvalidInput {
        key: key.to_owned(),
        errors: vec![ValidationIssue::new("", e.to_string())],
    })
}

/// Encodes a tool's return value.
pub fn encode_output<T: Serialize>(key: &'static str, output: &T) -> Result<Value, ToolError> {
    serde_json::to_value(output).map_err(|e| ToolError::InvalidOutput {
        key: key.to_owned(),
        errors: vec![ValidationIssue::new(
            "",
            format!("the output could not be serialized: {e}"),
        )],
    })
}

/// Encodes a fallible tool's return value; `Err(e)` becomes `Execution` with `e`'s text.
pub fn encode_result<T: Serialize, E: Display>(
    key: &'static str,
    result: Result<T, E>,
) -> Result<Value, ToolError> {
    match result {
        Ok(output) => encode_output(key, &output),
        Err(e) => Err(ToolError::Execution {
            key: key.to_owned(),
            message: e.to_string(),
        }),
    }
}

/// A resource parameter's value, or `MissingContext`.
pub fn resource<T: Send + Sync + 'static>(
    key: &'static str,
    ctx: &ToolContext,
) -> Result<Resource<T>, ToolError> {
    ctx.resource::<T>().map_err(|e| ToolError::MissingContext {
        key: key.to_owned(),
        what: format!("a `{}` resource", e.type_name),
    })
}

/// Runs a blocking tool body on tokio's blocking threads, or inline when there is no
/// tokio runtime. A panic becomes `Panicked`.
pub async fn run_blocking<T, F>(key: &'static str, f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(f).await.map_err(|e| {
            let message = if e.is_panic() {
                panic_message(e.into_panic().as_ref())
            } else {
                "the blocking task was cancelled".to_owned()
            };
            ToolError::Panicked {
                key: key.to_owned(),
                message,
            }
        }),
        // Outside tokio: run here; the door's panic guard still applies.
        Err(_) => Ok(f()),
    }
}
