//! One registered tool ([`Tool`]), the code behind it ([`ToolHandler`]), and tools made
//! at run time ([`DynamicTool`]).
//!
//! A [`Tool`] is what the registry holds and the door calls: the spec (built on first
//! use for `#[tool]` functions, whose schema generation is most of the cost of
//! start-up), the type-erased handler, where the tool was defined, and its validators,
//! compiled once on first use. Nothing in it belongs to a particular run or cassette.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::abi::{RegisteredHandler, StaticSpec, ToolFuture, ToolRegistration};
use crate::canonical::fingerprint;
use crate::context::ToolContext;
use crate::error::{RegistryError, SchemaSide, ToolError, ToolOrigin};
use crate::schema::{check_input_root, normalize_input_schema};
use crate::spec::{ToolSpec, Trust};
use crate::validate::{SchemaValidator, ValidationIssue, ValidationResult};

/// The type-erased code of a tool: input JSON in, output JSON out.
#[derive(Clone)]
pub struct ToolHandler(pub(crate) HandlerKind);

/// How a handler runs.
#[derive(Clone)]
pub(crate) enum HandlerKind {
    Sync(fn(&ToolContext, Value) -> Result<Value, ToolError>),
    Async(Arc<dyn Fn(ToolContext, Value) -> ToolFuture + Send + Sync>),
    /// No code of its own: the caller hands the door the code of each call (an
    /// operation, such as a model completion; see `crate::call::Operation`).
    Given,
}

impl ToolHandler {
    /// Wraps a function that returns a [`ToolFuture`].
    pub fn new(
        f: impl Fn(ToolContext, Value) -> ToolFuture + Send + Sync + 'static,
    ) -> ToolHandler {
        ToolHandler(HandlerKind::Async(Arc::new(f)))
    }

    fn registered(handler: RegisteredHandler) -> ToolHandler {
        ToolHandler(match handler {
            RegisteredHandler::Sync(f) => HandlerKind::Sync(f),
            RegisteredHandler::Async(f) => HandlerKind::Async(Arc::new(f)),
        })
    }
}

impl fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolHandler")
    }
}

/// A tool made at run time: a hand-written spec and a closure.
#[derive(Debug)]
pub struct DynamicTool {
    pub(super) spec: ToolSpec,
    pub(super) handler: ToolHandler,
    pub(super) source: String,
    pub(super) approval_when: Option<ApprovalPredicate>,
    pub(super) gated_takeover: bool,
    pub(super) idempotency_fn: Option<IdempotencyKeyFn>,
}

/// Makes a call's idempotency key from its validated input and its context: calls of
/// one run with the same key are one call (see [`DynamicTool::with_idempotency_key`]).
#[derive(Clone)]
pub struct IdempotencyKeyFn(pub(crate) Arc<KeyFn>);

/// The closure behind an [`IdempotencyKeyFn`].
type KeyFn = dyn Fn(&Value, &ToolContext) -> String + Send + Sync;

impl fmt::Debug for IdempotencyKeyFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdempotencyKeyFn(..)")
    }
}

/// Decides from a call's validated input whether the call needs approval.
#[derive(Clone)]
pub struct ApprovalPredicate(Arc<dyn Fn(&Value) -> bool + Send + Sync>);

impl fmt::Debug for ApprovalPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalPredicate(..)")
    }
}

impl DynamicTool {
    /// A tool from a spec and an async closure taking the context and the validated
    /// input. The closure's `Err(e)` becomes an `Execution` error with `e`'s message.
    pub fn new<F, Fut, E>(spec: ToolSpec, f: F) -> DynamicTool
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
        E: fmt::Display,
    {
        let key = spec.key();
        let handler = ToolHandler::new(move |ctx, input| {
            let fut = f(ctx, input);
            let key = key.clone();
            Box::pin(async move {
                fut.await.map_err(|e| ToolError::Execution {
                    key,
                    message: e.to_string(),
                })
            })
        });
        DynamicTool::from_handler(spec, handler)
    }

    /// A tool from a spec and a handler that reports [`ToolError`]s itself.
    pub fn from_handler(spec: ToolSpec, handler: ToolHandler) -> DynamicTool {
        DynamicTool {
            spec,
            handler,
            source: "dynamic".into(),
            approval_when: None,
            gated_takeover: false,
            idempotency_fn: None,
        }
    }

    /// Asks for approval of the calls whose validated input `predicate` accepts
    /// (every call needs approval anyway when the spec sets `needs_approval`).
    pub fn with_approval_when(
        mut self,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> DynamicTool {
        self.approval_when = Some(ApprovalPredicate(Arc::new(predicate)));
        self
    }

    /// Makes each call's idempotency key with `key` (from the validated input and the
    /// context) instead of reading the spec's `idempotency_key` field. For a `write` or
    /// `external` tool, calls of one executor run with the same key run once; the
    /// others get the first one's outcome. Whether the key is deterministic is the
    /// tool author's contract; tackle does not check it.
    pub fn with_idempotency_key(
        mut self,
        key: impl Fn(&Value, &ToolContext) -> String + Send + Sync + 'static,
    ) -> DynamicTool {
        self.idempotency_fn = Some(IdempotencyKeyFn(Arc::new(key)));
        self
    }

    /// Lets this tool take over what a key or `namespace.name` resolves to when that
    /// is now a *gated* tool (one that requires permissions) and this tool does not
    /// require all of them. Without it, such a registration is refused
    /// ([`RegistryError::GatedTakeover`]), so registering a tool at run time can never
    /// quietly open a gated name to callers without the grant.
    ///
    /// [`RegistryError::GatedTakeover`]: crate::RegistryError::GatedTakeover
    pub fn with_gated_takeover(mut self, allowed: bool) -> DynamicTool {
        self.gated_takeover = allowed;
        self
    }

    /// Names who registers the tool (for example `mcp:weather`); shown in errors and
    /// used as the prefix by [`CollisionStrategy::AutoPrefix`](super::CollisionStrategy::AutoPrefix).
    pub fn with_source(mut self, source: impl Into<String>) -> DynamicTool {
        self.source = source.into();
        self
    }
}

/// One registered tool: its spec, its code, where it came from, and its compiled
/// validators.
#[derive(Debug)]
pub struct Tool {
    pub(super) key: String,
    /// `namespace.name`, kept for indexing.
    pub(super) path: String,
    pub(super) meta: Meta,
    spec: SpecCell,
    /// Whether the spec needs checks at registration that the macro could not make.
    check_at_build: bool,
    handler: ToolHandler,
    pub(super) origin: ToolOrigin,
    validators: OnceLock<Result<Validators, ToolError>>,
    /// The schemas' fingerprint, computed on first use.
    fingerprint: OnceLock<String>,
    approval_when: Option<ApprovalPredicate>,
    pub(crate) idempotency_fn: Option<IdempotencyKeyFn>,
    /// Whether calls get a per-call context scope (tools that never see the context
    /// do not).
    scoped: bool,
    call_info: OnceLock<CallInfo>,
    /// Which input properties hold secrets, computed on first use.
    secret_arguments: OnceLock<SecretArguments>,
    /// For an operation: whether a replay runs it too and compares its outcome with
    /// the recording (see [`Operation::with_replay_check`](crate::call::Operation::with_replay_check)).
    pub(crate) replay_check: bool,
}

/// Which of a tool's input properties hold secrets (see
/// [`crate::call`]'s secret arguments): those its schema marks `writeOnly`, and those
/// named like secrets ([`tackle_contract::SECRET_WORDS`]).
#[derive(Debug, Default)]
pub(crate) struct SecretArguments {
    /// The properties, by `writeOnly` or by the default words.
    pub(crate) named: Box<[String]>,
    /// Those the schema marks `writeOnly` (secret whatever the words).
    pub(crate) write_only: Box<[String]>,
    /// Whether the schema takes properties it does not name (so an input's other
    /// keys are checked by name at call time).
    pub(crate) open: bool,
}

/// What the registry needs to know of a tool without building its schemas: enough to
/// sort, index, search and resolve collisions.
#[derive(Debug)]
pub(super) struct Meta {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) tags: Vec<String>,
    pub(super) deprecated: bool,
    pub(super) trust: Trust,
}

/// A tool's spec: given (run-time tools), or built on first use (`#[tool]` functions,
/// whose schema generation is most of the cost of start-up).
#[derive(Debug)]
enum SpecCell {
    Ready(ToolSpec),
    Lazy {
        make: fn() -> ToolSpec,
        cell: OnceLock<ToolSpec>,
    },
}

/// What every call of a tool hands its context: shared, so a call clones two pointers.
#[derive(Debug)]
pub(crate) struct CallInfo {
    pub(crate) key: Arc<str>,
    pub(crate) secrets: Arc<[String]>,
}

/// A tool's compiled input and output schemas.
#[derive(Debug)]
pub(crate) struct Validators {
    pub(crate) input: SchemaValidator,
    pub(crate) output: SchemaValidator,
}

impl Tool {
    /// A `#[tool]` function: its spec is built on first use.
    pub(super) fn from_registration(reg: &ToolRegistration) -> Tool {
        let origin = ToolOrigin::Static {
            file: reg.file,
            line: reg.line,
            module: reg.module,
        };
        let handler = ToolHandler::registered(reg.handler);
        Tool::from_static(
            reg.key,
            reg.meta,
            reg.spec,
            reg.check_at_build,
            handler,
            origin,
        )
    }

    /// A tool of a toolset, bound to its value: as a `#[tool]` function's, its spec is
    /// built on first use.
    pub(super) fn from_bound(bound: super::toolset::BoundTool) -> Tool {
        let origin = ToolOrigin::Toolset {
            type_name: bound.type_name,
            file: bound.file,
            line: bound.line,
        };
        Tool::from_static(
            bound.key,
            bound.meta,
            bound.spec,
            bound.check_at_build,
            bound.handler,
            origin,
        )
    }

    /// A tool whose spec the macro wrote (`meta`) and builds on first use (`spec`).
    fn from_static(
        key: &str,
        m: &'static StaticSpec,
        spec: fn() -> ToolSpec,
        check_at_build: bool,
        handler: ToolHandler,
        origin: ToolOrigin,
    ) -> Tool {
        Tool {
            key: key.to_owned(),
            path: format!("{}.{}", m.namespace, m.name),
            meta: Meta {
                namespace: m.namespace.to_owned(),
                name: m.name.to_owned(),
                version: m.version.to_owned(),
                tags: m.tags.iter().map(|t| (*t).to_owned()).collect(),
                deprecated: m.deprecated,
                trust: m.trust,
            },
            spec: SpecCell::Lazy {
                make: spec,
                cell: OnceLock::new(),
            },
            check_at_build,
            handler,
            origin,
            validators: OnceLock::new(),
            fingerprint: OnceLock::new(),
            approval_when: m.approval_when.map(|f| ApprovalPredicate(Arc::new(f))),
            idempotency_fn: None,
            scoped: m.uses_context,
            call_info: OnceLock::new(),
            secret_arguments: OnceLock::new(),
            replay_check: false,
        }
    }

    /// A tool from a hand-written spec, brought into canonical form.
    pub(super) fn from_written(
        mut spec: ToolSpec,
        handler: ToolHandler,
        origin: ToolOrigin,
        approval_when: Option<ApprovalPredicate>,
    ) -> Tool {
        normalize_input_schema(&mut spec.input_schema);
        Tool {
            key: spec.key(),
            path: spec.path(),
            meta: Meta {
                namespace: spec.namespace.clone(),
                name: spec.name.clone(),
                version: spec.version.clone(),
                tags: spec.tags.clone(),
                deprecated: spec.deprecated,
                trust: spec.trust,
            },
            spec: SpecCell::Ready(spec),
            check_at_build: true,
            handler,
            origin,
            validators: OnceLock::new(),
            fingerprint: OnceLock::new(),
            approval_when,
            idempotency_fn: None,
            scoped: true,
            call_info: OnceLock::new(),
            secret_arguments: OnceLock::new(),
            replay_check: false,
        }
    }

    /// An operation's tool: a spec whose code each caller gives the door (see
    /// `crate::call::Operation`). Never in a registry.
    pub(crate) fn for_operation(spec: ToolSpec) -> Tool {
        let mut tool = Tool::from_written(
            spec,
            ToolHandler(HandlerKind::Given),
            ToolOrigin::Dynamic {
                source: "operation".to_owned(),
            },
            None,
        );
        tool.scoped = false;
        tool
    }

    /// Moves the tool to another namespace (collision strategy `auto-prefix`).
    pub(super) fn move_to(&mut self, namespace: String) {
        self.key = format!("{namespace}.{}@{}", self.meta.name, self.meta.version);
        self.path = format!("{namespace}.{}", self.meta.name);
        self.call_info = OnceLock::new();
        let spec = match &mut self.spec {
            SpecCell::Ready(spec) => Some(spec),
            SpecCell::Lazy { cell, .. } => cell.get_mut(),
        };
        if let Some(spec) = spec {
            spec.namespace.clone_from(&namespace);
        }
        self.meta.namespace = namespace;
    }

    /// The registry key, `namespace.name@version`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether running a call of this tool a second time is harmless: its spec says
    /// so ([`ToolSpec::rerun_safe`]: it changes nothing, or its input names an
    /// idempotency key), or it has an idempotency key function
    /// ([`DynamicTool::with_idempotency_key`]). A durable run re-runs only such a call
    /// after a crash.
    pub fn rerun_safe(&self) -> bool {
        self.spec().rerun_safe() || self.idempotency_fn.is_some()
    }

    /// The tool's specification (built on first use for `#[tool]` functions).
    pub fn spec(&self) -> &ToolSpec {
        match &self.spec {
            SpecCell::Ready(spec) => spec,
            SpecCell::Lazy { make, cell } => cell.get_or_init(|| {
                let mut spec = make();
                // A collision strategy may have moved the tool.
                spec.namespace.clone_from(&self.meta.namespace);
                super::warn::check(&spec, false);
                spec
            }),
        }
    }

    /// A stable fingerprint of the tool's input and output schemas, so a cassette can
    /// tell when a tool changed since it was recorded. Computed once.
    pub fn schema_fingerprint(&self) -> &str {
        self.fingerprint.get_or_init(|| {
            let spec = self.spec();
            fingerprint(&Value::Array(vec![
                spec.input_schema.clone(),
                spec.output_schema.clone(),
            ]))
        })
    }

    /// Whether a call with this validated input needs approval: always when the spec
    /// sets `needs_approval`, else when the tool's approval predicate says so.
    pub fn needs_approval(&self, input: &Value) -> bool {
        self.spec().needs_approval || self.approval_when.as_ref().is_some_and(|p| (p.0)(input))
    }

    /// Whether some call of this tool may need approval (so the door looks closer).
    pub fn may_need_approval(&self) -> bool {
        self.spec().needs_approval || self.approval_when.is_some()
    }

    /// Whether the tool sees its context, and so may report progress, stream, read
    /// secrets or watch for cancellation (`#[tool]` functions that take a
    /// `&ToolContext`, and every dynamic tool). The door gives other tools no
    /// per-call scope.
    pub fn takes_context(&self) -> bool {
        self.scoped
    }

    /// The key and declared secrets, shared by every call's context.
    /// Which input properties hold secrets, by the default words.
    pub(crate) fn secret_arguments(&self) -> &SecretArguments {
        self.secret_arguments.get_or_init(|| {
            let schema = &self.spec().input_schema;
            let properties = schema.get("properties").and_then(Value::as_object);
            let names = |secret: &dyn Fn(&str, &Value) -> bool| -> Box<[String]> {
                properties
                    .into_iter()
                    .flatten()
                    .filter(|(name, property)| secret(name, property))
                    .map(|(name, _)| name.clone())
                    .collect()
            };
            let write_only =
                |property: &Value| property.get("writeOnly") == Some(&Value::Bool(true));
            SecretArguments {
                named: names(&|name, property| {
                    write_only(property)
                        || tackle_contract::is_secret_name(name, tackle_contract::SECRET_WORDS)
                }),
                write_only: names(&|_, property| write_only(property)),
                open: schema.get("additionalProperties") != Some(&Value::Bool(false)),
            }
        })
    }

    pub(crate) fn call_info(&self) -> &CallInfo {
        self.call_info.get_or_init(|| CallInfo {
            key: Arc::from(self.key.as_str()),
            secrets: Arc::from(self.spec().secrets.as_slice()),
        })
    }

    /// Where the tool was defined.
    pub fn origin(&self) -> &ToolOrigin {
        &self.origin
    }

    pub(crate) fn handler(&self) -> &ToolHandler {
        &self.handler
    }

    /// The compiled validators, compiled on first use and cached for the tool's life.
    #[inline]
    pub(crate) fn validators(&self) -> Result<&Validators, ToolError> {
        if let Some(Ok(validators)) = self.validators.get() {
            return Ok(validators);
        }
        self.compile_validators()
    }

    #[cold]
    fn compile_validators(&self) -> Result<&Validators, ToolError> {
        self.validators
            .get_or_init(|| {
                let compile = |which: SchemaSide, schema: &Value| {
                    SchemaValidator::compile(schema).map_err(|message| ToolError::InvalidSchema {
                        key: self.key.clone(),
                        which,
                        message,
                    })
                };
                Ok(Validators {
                    input: compile(SchemaSide::Input, &self.spec().input_schema)?,
                    output: compile(SchemaSide::Output, &self.spec().output_schema)?,
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Validates an input against the tool's input schema.
    pub fn validate_input(&self, input: &Value) -> ValidationResult {
        match self.validators() {
            Ok(v) => v.input.validate(input),
            Err(e) => ValidationResult::from_issues(vec![ValidationIssue::new("", e.to_string())]),
        }
    }

    /// Validates an output against the tool's output schema.
    pub fn validate_output(&self, output: &Value) -> ValidationResult {
        match self.validators() {
            Ok(v) => v.output.validate(output),
            Err(e) => ValidationResult::from_issues(vec![ValidationIssue::new("", e.to_string())]),
        }
    }

    /// Checks the spec, the input root and the examples.
    pub(super) fn check(&self) -> Result<(), RegistryError> {
        if !self.check_at_build {
            // `#[tool]` checked names, policy and description at compile time, and a
            // schema derived from parameters is an object by construction.
            return Ok(());
        }
        let invalid = |reason: String| RegistryError::InvalidSpec {
            key: self.key.clone(),
            origin: self.origin.clone(),
            reason,
        };
        let spec = self.spec();
        spec.check().map_err(invalid)?;
        check_input_root(&spec.input_schema).map_err(invalid)?;
        if let Some(field) = &spec.idempotency_key {
            if spec
                .input_schema
                .pointer(&format!("/properties/{field}"))
                .is_none()
            {
                return Err(invalid(format!(
                    "idempotency_key `{field}` is not a property of the input schema"
                )));
            }
        }
        let validators = self.validators().map_err(|e| invalid(e.to_string()))?;
        for (index, example) in spec.examples.iter().enumerate() {
            let bad = |which, result: ValidationResult| RegistryError::InvalidExample {
                key: self.key.clone(),
                origin: self.origin.clone(),
                index,
                which,
                errors: result.issues,
            };
            let r = validators.input.validate(&example.input);
            if !r.valid {
                return Err(bad("input", r));
            }
            if let Some(output) = &example.output {
                let r = validators.output.validate(output);
                if !r.valid {
                    return Err(bad("output", r));
                }
            }
        }
        Ok(())
    }
}
