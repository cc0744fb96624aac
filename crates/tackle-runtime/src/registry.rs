//! The registry: every tool the program can call, keyed `namespace.name@version`.
//!
//! `#[tool]` functions register themselves at link time (through `inventory`), so the
//! registry is built at start-up by [`Registry::from_inventory`] with no list to keep
//! in sync. Tools made at run time (a closure plus a hand-written [`ToolSpec`], or a
//! tool imported from an MCP server) join through [`Registry::register`].
//!
//! **Linking.** The linker keeps only crates the binary uses. Tools that live in
//! another crate register only if that crate is linked: when nothing else from it is
//! used, write `use my_tools as _;` in the binary (or test) so its tools are there.
//!
//! **Order.** The listing is sorted by namespace, name, then version (semver-aware),
//! the same on every run: prompts built from it stay byte-stable, which prompt caching
//! depends on.
//!
//! **Resolution.** A call names its tool by full key (`math.add@1`), by
//! `namespace.name` (the highest version), or by a bare name that only one
//! `namespace.name` has. Anything else is `NotFound`, with the closest keys suggested.
//!
//! **Collisions.** Two tools with one key are an error naming both definitions
//! ([`CollisionStrategy::Error`], the default). [`CollisionStrategy::AutoPrefix`]
//! instead moves the later tool under a namespace prefixed with its crate or source;
//! [`CollisionStrategy::Priority`] keeps the more trusted tool by the ladder
//! first-party > trusted > untrusted > mcp (a tie is still an error).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::{RegistryError, SchemaSide, ToolError, ToolOrigin};
use crate::private::StaticSpec;
use crate::replay::canonical::{fingerprint, FnvMap};
use crate::schema::{check_input_root, normalize_input_schema};
use crate::spec::{ToolSpec, Trust};
use crate::validate::{SchemaValidator, ValidationIssue, ValidationResult};
use crate::version::compare_versions;

/// The future a tool handler returns: the tool's output as JSON, or why it failed.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// A `#[tool]` function's link-time registration. Made by the macro; not built by hand.
#[derive(Debug)]
pub struct ToolRegistration {
    key: &'static str,
    meta: &'static StaticSpec,
    spec: fn() -> ToolSpec,
    check_at_build: bool,
    handler: RegisteredHandler,
    file: &'static str,
    line: u32,
    module: &'static str,
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
}

inventory::collect!(ToolRegistration);

/// Every `#[tool]` linked into the program, in a stable order (by key, then source
/// location). Filter it and pass it to [`Registry::from_registrations`] to build a
/// registry of a subset, for example the tools of one agent.
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

/// The type-erased code of a tool: input JSON in, output JSON out.
#[derive(Clone)]
pub struct ToolHandler(pub(crate) HandlerKind);

/// How a handler runs.
#[derive(Clone)]
pub(crate) enum HandlerKind {
    Sync(fn(&ToolContext, Value) -> Result<Value, ToolError>),
    Async(Arc<dyn Fn(ToolContext, Value) -> ToolFuture + Send + Sync>),
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
    spec: ToolSpec,
    handler: ToolHandler,
    source: String,
    approval_when: Option<ApprovalPredicate>,
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
        DynamicTool {
            spec,
            handler,
            source: "dynamic".into(),
            approval_when: None,
        }
    }

    /// A tool from a spec and a handler that reports [`ToolError`]s itself.
    pub fn from_handler(spec: ToolSpec, handler: ToolHandler) -> DynamicTool {
        DynamicTool {
            spec,
            handler,
            source: "dynamic".into(),
            approval_when: None,
        }
    }

    /// Asks for approval of the calls whose validated input `predicate` accepts
    /// (every call needs approval anyway when the spec sets `needs_approval`).
    pub fn needs_approval_when(
        mut self,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> DynamicTool {
        self.approval_when = Some(ApprovalPredicate(Arc::new(predicate)));
        self
    }

    /// Names who registers the tool (for example `mcp:weather`); shown in errors and
    /// used as the prefix by [`CollisionStrategy::AutoPrefix`].
    pub fn source(mut self, source: impl Into<String>) -> DynamicTool {
        self.source = source.into();
        self
    }
}

/// One registered tool: its spec, its code, where it came from, and its compiled
/// validators.
#[derive(Debug)]
pub struct Tool {
    key: String,
    /// `namespace.name`, kept for indexing.
    path: String,
    meta: Meta,
    spec: SpecCell,
    /// Whether the spec needs checks at registration that the macro could not make.
    check_at_build: bool,
    handler: ToolHandler,
    origin: ToolOrigin,
    validators: OnceLock<Result<Validators, ToolError>>,
    fingerprint: OnceLock<String>,
    approval_when: Option<ApprovalPredicate>,
    /// Whether calls get a per-call context scope (tools that never see the context
    /// do not).
    scoped: bool,
    call_info: OnceLock<CallInfo>,
    /// The last cassette this tool's schemas were checked against (0: none).
    checked_against: AtomicU64,
}

/// What the registry needs to know of a tool without building its schemas: enough to
/// sort, index, search and resolve collisions.
#[derive(Debug)]
struct Meta {
    namespace: String,
    name: String,
    version: String,
    tags: Vec<String>,
    deprecated: bool,
    trust: Trust,
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

/// A tool's compiled input and output schemas.
/// What every call of a tool hands its context: shared, so a call clones two pointers.
#[derive(Debug)]
pub(crate) struct CallInfo {
    pub(crate) key: Arc<str>,
    pub(crate) secrets: Arc<[String]>,
}

#[derive(Debug)]
pub(crate) struct Validators {
    pub(crate) input: SchemaValidator,
    pub(crate) output: SchemaValidator,
}

impl Tool {
    /// A `#[tool]` function: its spec is built on first use.
    fn from_registration(reg: &ToolRegistration) -> Tool {
        let m = reg.meta;
        Tool {
            key: reg.key.to_owned(),
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
                make: reg.spec,
                cell: OnceLock::new(),
            },
            check_at_build: reg.check_at_build,
            handler: ToolHandler::registered(reg.handler),
            origin: ToolOrigin::Static {
                file: reg.file,
                line: reg.line,
                module: reg.module,
            },
            validators: OnceLock::new(),
            fingerprint: OnceLock::new(),
            approval_when: m.approval_when.map(|f| ApprovalPredicate(Arc::new(f))),
            scoped: m.uses_context,
            call_info: OnceLock::new(),
            checked_against: AtomicU64::new(0),
        }
    }

    /// A tool from a hand-written spec, brought into canonical form.
    fn from_written(
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
            scoped: true,
            call_info: OnceLock::new(),
            checked_against: AtomicU64::new(0),
        }
    }

    /// Moves the tool to another namespace (collision strategy `auto-prefix`).
    fn move_to(&mut self, namespace: String) {
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

    /// The tool's specification (built on first use for `#[tool]` functions).
    pub fn spec(&self) -> &ToolSpec {
        match &self.spec {
            SpecCell::Ready(spec) => spec,
            SpecCell::Lazy { make, cell } => cell.get_or_init(|| {
                let mut spec = make();
                // A collision strategy may have moved the tool.
                spec.namespace.clone_from(&self.meta.namespace);
                spec
            }),
        }
    }

    /// A stable fingerprint of the tool's input and output schemas, so a cassette can
    /// tell when a tool changed since it was recorded.
    pub fn schema_fingerprint(&self) -> &str {
        self.fingerprint.get_or_init(|| {
            let spec = self.spec();
            fingerprint(&Value::Array(vec![
                spec.input_schema.clone(),
                spec.output_schema.clone(),
            ]))
        })
    }

    /// Whether this is the first call of the tool under this cassette (which then
    /// checks its schemas against the recording).
    pub(crate) fn first_call_under(&self, cassette_id: u64) -> bool {
        self.checked_against
            .swap(cassette_id, AtomicOrdering::Relaxed)
            != cassette_id
    }

    /// Whether a call with this validated input needs approval: always when the spec
    /// sets `needs_approval`, else when the tool's approval predicate says so.
    pub fn needs_approval(&self, input: &Value) -> bool {
        self.spec().needs_approval || self.approval_when.as_ref().is_some_and(|p| (p.0)(input))
    }

    /// Whether the tool sees its context, and so may report progress, stream, read
    /// secrets or watch for cancellation (`#[tool]` functions that take a
    /// `&ToolContext`, and every dynamic tool). The door gives other tools no
    /// per-call scope.
    pub fn takes_context(&self) -> bool {
        self.scoped
    }

    /// The key and declared secrets, shared by every call's context.
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
    pub(crate) fn validators(&self) -> Result<&Validators, ToolError> {
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
    fn check(&self) -> Result<(), RegistryError> {
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
                errors: result.errors,
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

/// What to do when a tool's key is already taken. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollisionStrategy {
    /// Refuse, naming both definitions.
    #[default]
    Error,
    /// Move the later tool under `<crate or source>.<namespace>`.
    AutoPrefix,
    /// Keep the more trusted tool; a tie is an error.
    Priority,
}

/// A collision the registry resolved, kept so that nothing happens silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollisionNote {
    /// The contested key.
    pub key: String,
    /// What was done, in words.
    pub resolution: String,
}

/// Filters for [`Registry::search`]. All set filters must hold.
#[derive(Clone, Debug, Default)]
pub struct ToolQuery {
    name_contains: Option<String>,
    any_tags: Vec<String>,
    all_tags: Vec<String>,
    include_deprecated: bool,
}

impl ToolQuery {
    /// Matches every tool that is not deprecated.
    pub fn new() -> ToolQuery {
        ToolQuery::default()
    }

    /// `namespace.name` contains this text, ignoring case.
    pub fn name_contains(mut self, text: impl Into<String>) -> ToolQuery {
        self.name_contains = Some(text.into().to_lowercase());
        self
    }

    /// The tool has at least one of these tags.
    pub fn any_tag<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> ToolQuery {
        self.any_tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The tool has every one of these tags.
    pub fn all_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> ToolQuery {
        self.all_tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Includes deprecated tools, which are hidden otherwise.
    pub fn include_deprecated(mut self, yes: bool) -> ToolQuery {
        self.include_deprecated = yes;
        self
    }

    fn matches(&self, tool: &Tool) -> bool {
        let meta = &tool.meta;
        let has = |t: &String| meta.tags.contains(t);
        (self.include_deprecated || !meta.deprecated)
            && self
                .name_contains
                .as_ref()
                .is_none_or(|n| tool.path.to_lowercase().contains(n.as_str()))
            && (self.any_tags.is_empty() || self.any_tags.iter().any(has))
            && self.all_tags.iter().all(has)
    }
}

/// Every callable tool. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Registry {
    strategy: CollisionStrategy,
    tools: Vec<Arc<Tool>>,
    // FNV rather than SipHash: lookups are of short keys into a table the program
    // built, so crafted queries cannot make chains long; SipHash cost more than the
    // rest of a lookup.
    by_key: FnvMap<String, usize>,
    /// `namespace.name` -> indices, highest version first.
    by_path: FnvMap<String, Vec<usize>>,
    /// bare name -> `namespace.name` paths that have it.
    by_name: FnvMap<String, Vec<String>>,
    collisions: Vec<CollisionNote>,
}

impl Registry {
    /// An empty registry that refuses duplicate keys.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// An empty registry with the given collision strategy.
    pub fn with_strategy(strategy: CollisionStrategy) -> Registry {
        Registry {
            strategy,
            ..Registry::default()
        }
    }

    /// Every `#[tool]` linked into the program, with [`CollisionStrategy::Error`].
    pub fn from_inventory() -> Result<Registry, RegistryError> {
        Registry::from_inventory_with(CollisionStrategy::Error)
    }

    /// Every `#[tool]` linked into the program, with the given collision strategy.
    pub fn from_inventory_with(strategy: CollisionStrategy) -> Result<Registry, RegistryError> {
        Registry::from_registrations(registrations(), strategy)
    }

    /// A registry of the given link-time registrations (the building block of
    /// [`Registry::from_inventory`]).
    pub fn from_registrations<'a>(
        registrations: impl IntoIterator<Item = &'a ToolRegistration>,
        strategy: CollisionStrategy,
    ) -> Result<Registry, RegistryError> {
        let mut registry = Registry::with_strategy(strategy);
        for reg in registrations {
            let tool = Tool::from_registration(reg);
            registry.insert(tool)?;
        }
        registry.reindex();
        Ok(registry)
    }

    /// Adds a run-time tool. Returns the key it was registered under (which differs
    /// from its spec's key only when [`CollisionStrategy::AutoPrefix`] moved it).
    pub fn register(&mut self, tool: DynamicTool) -> Result<String, RegistryError> {
        let tool = Tool::from_written(
            tool.spec,
            tool.handler,
            ToolOrigin::Dynamic {
                source: tool.source,
            },
            tool.approval_when,
        );
        let key = self.insert(tool)?;
        self.reindex();
        Ok(key)
    }

    /// Removes the tool with exactly this key and returns it.
    pub fn unregister(&mut self, key: &str) -> Result<Arc<Tool>, RegistryError> {
        let index = *self
            .by_key
            .get(key)
            .ok_or_else(|| RegistryError::NotRegistered {
                key: key.to_owned(),
            })?;
        let tool = self.tools.remove(index);
        self.reindex();
        Ok(tool)
    }

    /// Checks a tool and adds it (unsorted; the caller reindexes). Returns its key.
    fn insert(&mut self, mut tool: Tool) -> Result<String, RegistryError> {
        tool.check()?;
        if let Some(&existing) = self.by_key.get(&tool.key) {
            let first = &self.tools[existing];
            match self.strategy {
                CollisionStrategy::Error => return Err(duplicate(first, &tool)),
                CollisionStrategy::AutoPrefix => {
                    let old_key = tool.key.clone();
                    let prefix: String = tool
                        .origin
                        .source_name()
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '-' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    let base = format!("{prefix}.{}", tool.meta.namespace);
                    let mut namespace = base.clone();
                    let mut n = 2;
                    while self.by_key.contains_key(&format!(
                        "{namespace}.{}@{}",
                        tool.meta.name, tool.meta.version
                    )) {
                        namespace = format!("{base}_{n}");
                        n += 1;
                    }
                    tool.move_to(namespace);
                    self.collisions.push(CollisionNote {
                        resolution: format!("{} was registered as `{}`", tool.origin, tool.key),
                        key: old_key,
                    });
                }
                CollisionStrategy::Priority => {
                    let (kept, dropped) = match tool.meta.trust.cmp(&first.meta.trust) {
                        std::cmp::Ordering::Equal => return Err(duplicate(first, &tool)),
                        std::cmp::Ordering::Greater => (&tool, first.as_ref()),
                        std::cmp::Ordering::Less => (first.as_ref(), &tool),
                    };
                    self.collisions.push(CollisionNote {
                        key: tool.key.clone(),
                        resolution: format!(
                            "kept {} ({}) over {} ({})",
                            kept.origin,
                            kept.meta.trust.as_str(),
                            dropped.origin,
                            dropped.meta.trust.as_str()
                        ),
                    });
                    if tool.meta.trust > first.meta.trust {
                        let key = tool.key.clone();
                        self.tools[existing] = Arc::new(tool);
                        return Ok(key);
                    }
                    return Ok(first.key.clone());
                }
            }
        }
        let key = tool.key.clone();
        self.by_key.insert(key.clone(), self.tools.len());
        self.tools.push(Arc::new(tool));
        Ok(key)
    }

    /// Sorts the tools and rebuilds the lookup tables.
    fn reindex(&mut self) {
        self.tools.sort_by(|a, b| {
            let (x, y) = (&a.meta, &b.meta);
            (&x.namespace, &x.name)
                .cmp(&(&y.namespace, &y.name))
                .then_with(|| compare_versions(&x.version, &y.version))
        });
        self.by_key.clear();
        self.by_path.clear();
        self.by_name.clear();
        for (i, tool) in self.tools.iter().enumerate() {
            self.by_key.insert(tool.key.clone(), i);
            let path = &tool.path;
            let versions = self.by_path.entry(path.clone()).or_default();
            if versions.is_empty() {
                self.by_name
                    .entry(tool.meta.name.clone())
                    .or_default()
                    .push(path.clone());
            }
            // Sorted ascending, so each later version goes first.
            versions.insert(0, i);
        }
    }

    /// Finds a tool by key, `namespace.name` (highest version) or unique bare name.
    pub fn resolve(&self, query: &str) -> Result<&Arc<Tool>, ToolError> {
        if let Some(&i) = self.by_key.get(query) {
            return Ok(&self.tools[i]);
        }
        if !query.contains('@') {
            if let Some(&i) = self.by_path.get(query).and_then(|v| v.first()) {
                return Ok(&self.tools[i]);
            }
            if let Some(paths) = self.by_name.get(query) {
                let highest = |p: &String| {
                    self.by_path
                        .get(p)
                        .and_then(|v| v.first())
                        .map(|&i| &self.tools[i])
                };
                if let [path] = paths.as_slice() {
                    if let Some(tool) = highest(path) {
                        return Ok(tool);
                    }
                }
                return Err(ToolError::Ambiguous {
                    query: query.to_owned(),
                    candidates: paths
                        .iter()
                        .filter_map(highest)
                        .map(|t| t.key.clone())
                        .collect(),
                });
            }
        }
        Err(ToolError::NotFound {
            query: query.to_owned(),
            suggestions: self.suggest(query),
        })
    }

    /// Like [`Registry::resolve`], without the error.
    pub fn get(&self, query: &str) -> Option<&Tool> {
        self.resolve(query).ok().map(Arc::as_ref)
    }

    /// Up to three keys close to `query`, closest first.
    fn suggest(&self, query: &str) -> Vec<String> {
        let q = query.to_lowercase();
        let mut scored: Vec<(f64, &str)> = self
            .tools
            .iter()
            .map(|t| {
                let score = [t.key.as_str(), &t.path, &t.meta.name]
                    .iter()
                    .map(|candidate| {
                        let c = candidate.to_lowercase();
                        let contains = !q.is_empty() && (c.contains(&q) || q.contains(&c));
                        strsim::normalized_damerau_levenshtein(&q, &c).max(if contains {
                            0.7
                        } else {
                            0.0
                        })
                    })
                    .fold(0.0, f64::max);
                (score, t.key.as_str())
            })
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(3)
            .map(|(_, k)| k.to_owned())
            .collect()
    }

    /// Every tool, sorted by namespace, name and version.
    pub fn list(&self) -> impl ExactSizeIterator<Item = &Arc<Tool>> {
        self.tools.iter()
    }

    /// The tools matching a query, in listing order.
    pub fn search(&self, query: &ToolQuery) -> Vec<&Arc<Tool>> {
        self.tools.iter().filter(|t| query.matches(t)).collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The collisions resolved so far by the collision strategy.
    pub fn collisions(&self) -> &[CollisionNote] {
        &self.collisions
    }
}

fn duplicate(first: &Tool, second: &Tool) -> RegistryError {
    RegistryError::DuplicateKey {
        key: second.key.clone(),
        first: first.origin.clone(),
        second: second.origin.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SideEffects, ToolExample, Trust};
    use crate::ToolErrorKind;
    use serde_json::json;

    fn tool(ns: &str, name: &str, version: &str) -> DynamicTool {
        let spec = ToolSpec::new(
            ns,
            name,
            version,
            SideEffects::None,
            format!("{name} v{version}"),
        );
        DynamicTool::new(spec, |_ctx, input| async move { Ok::<_, String>(input) })
    }

    fn registry(tools: Vec<DynamicTool>) -> Registry {
        let mut r = Registry::new();
        for t in tools {
            r.register(t).unwrap();
        }
        r
    }

    #[test]
    fn listing_is_sorted_semver_aware() {
        let r = registry(vec![
            tool("math", "add", "10"),
            tool("a", "z", "1"),
            tool("math", "add", "2"),
            tool("math", "abs", "1"),
        ]);
        let keys: Vec<_> = r.list().map(|t| t.key()).collect();
        assert_eq!(keys, ["a.z@1", "math.abs@1", "math.add@2", "math.add@10"]);
    }

    #[test]
    fn resolution_forms() {
        let r = registry(vec![
            tool("math", "add", "1.9"),
            tool("math", "add", "1.10"),
            tool("text", "upper", "1"),
            tool("b", "upper", "1"),
        ]);
        assert_eq!(r.resolve("math.add@1.9").unwrap().key(), "math.add@1.9");
        assert_eq!(r.resolve("math.add").unwrap().key(), "math.add@1.10");
        assert_eq!(r.resolve("add").unwrap().key(), "math.add@1.10");
        let err = r.resolve("upper").unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Ambiguous);
        assert!(
            err.to_string().contains("b.upper@1") && err.to_string().contains("text.upper@1"),
            "{err}"
        );
        let err = r.resolve("math.ad@1.9").unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::NotFound);
        match &err {
            ToolError::NotFound { suggestions, .. } => assert_eq!(suggestions[0], "math.add@1.9"),
            other => panic!("{other:?}"),
        }
        assert!(
            err.to_string().contains("did you mean `math.add@1.9`"),
            "{err}"
        );
        assert!(r.resolve("math.add@3").is_err());
        assert!(r.get("zzz").is_none());
    }

    #[test]
    fn duplicate_keys_name_both_origins() {
        let mut r = Registry::new();
        r.register(tool("m", "t", "1").source("first")).unwrap();
        let err = r
            .register(tool("m", "t", "1").source("second"))
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`first`") && text.contains("`second`"),
            "{text}"
        );
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn auto_prefix_moves_the_later_tool() {
        let mut r = Registry::with_strategy(CollisionStrategy::AutoPrefix);
        r.register(tool("m", "t", "1")).unwrap();
        let key = r
            .register(tool("m", "t", "1").source("mcp:weather"))
            .unwrap();
        assert_eq!(key, "mcp_weather.m.t@1");
        let key = r
            .register(tool("m", "t", "1").source("mcp:weather"))
            .unwrap();
        assert_eq!(key, "mcp_weather.m_2.t@1");
        assert_eq!(r.len(), 3);
        assert_eq!(r.collisions().len(), 2);
        assert!(r.resolve("mcp_weather.m.t@1").is_ok());
    }

    #[test]
    fn priority_keeps_the_more_trusted() {
        let mut r = Registry::with_strategy(CollisionStrategy::Priority);
        let with_trust = |trust, source: &str| {
            let mut spec = ToolSpec::new("m", "t", "1", SideEffects::None, "d");
            spec.trust = trust;
            spec.tags = vec![source.to_owned()];
            DynamicTool::new(spec, |_c, i| async move { Ok::<_, String>(i) }).source(source)
        };
        r.register(with_trust(Trust::Mcp, "mcp")).unwrap();
        r.register(with_trust(Trust::FirstParty, "local")).unwrap();
        r.register(with_trust(Trust::Untrusted, "other")).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r.resolve("m.t@1").unwrap().spec().tags, ["local"]);
        assert_eq!(r.collisions().len(), 2);
        assert!(
            r.register(with_trust(Trust::FirstParty, "again")).is_err(),
            "a tie is an error"
        );
    }

    #[test]
    fn search_by_name_and_tags() {
        let tagged = |name: &str, tags: &[&str], deprecated: bool| {
            let mut spec = ToolSpec::new("ns", name, "1", SideEffects::None, "d");
            spec.tags = tags.iter().map(|t| t.to_string()).collect();
            spec.deprecated = deprecated;
            DynamicTool::new(spec, |_c, i| async move { Ok::<_, String>(i) })
        };
        let r = registry(vec![
            tagged("ReadFile", &["fs", "read"], false),
            tagged("write_file", &["fs", "write"], false),
            tagged("old_read", &["fs", "read"], true),
        ]);
        let names = |q: &ToolQuery| {
            r.search(q)
                .iter()
                .map(|t| t.spec().name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&ToolQuery::new().name_contains("readf")),
            ["ReadFile"]
        );
        assert_eq!(
            names(&ToolQuery::new().any_tag(["write", "nope"])),
            ["write_file"]
        );
        assert_eq!(
            names(&ToolQuery::new().all_tags(["fs", "read"])),
            ["ReadFile"]
        );
        assert_eq!(
            names(
                &ToolQuery::new()
                    .all_tags(["fs", "read"])
                    .include_deprecated(true)
            ),
            ["ReadFile", "old_read"]
        );
        assert_eq!(
            names(
                &ToolQuery::new()
                    .name_contains("READ")
                    .include_deprecated(true)
            ),
            ["ReadFile", "old_read"]
        );
    }

    #[test]
    fn unregister_and_reregister() {
        let mut r = registry(vec![tool("m", "a", "1"), tool("m", "b", "1")]);
        let removed = r.unregister("m.a@1").unwrap();
        assert_eq!(removed.key(), "m.a@1");
        assert!(r.resolve("m.a").is_err());
        assert_eq!(r.resolve("b").unwrap().key(), "m.b@1");
        assert!(matches!(
            r.unregister("m.a@1"),
            Err(RegistryError::NotRegistered { .. })
        ));
        r.register(tool("m", "a", "1")).unwrap();
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn specs_and_examples_are_checked_at_registration() {
        let mut spec = ToolSpec::new("m", "t", "1", SideEffects::None, "d");
        spec.input_schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        spec.output_schema = json!({"type": "integer"});
        spec.examples = vec![ToolExample {
            input: json!({"n": 1}),
            output: Some(json!(1)),
        }];
        let ok = DynamicTool::new(spec.clone(), |_c, i| async move { Ok::<_, String>(i) });
        assert!(Registry::new().register(ok).is_ok());

        let mut bad_input = spec.clone();
        bad_input.examples[0].input = json!({"n": "one"});
        let err = Registry::new()
            .register(DynamicTool::new(bad_input, |_c, i| async move {
                Ok::<_, String>(i)
            }))
            .unwrap_err();
        assert!(
            matches!(
                &err,
                RegistryError::InvalidExample {
                    which: "input",
                    index: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("/n"), "{err}");

        let mut bad_output = spec.clone();
        bad_output.examples[0].output = Some(json!("x"));
        let err = Registry::new()
            .register(DynamicTool::new(bad_output, |_c, i| async move {
                Ok::<_, String>(i)
            }))
            .unwrap_err();
        assert!(
            matches!(
                err,
                RegistryError::InvalidExample {
                    which: "output",
                    ..
                }
            ),
            "{err}"
        );

        let mut not_object = spec.clone();
        not_object.input_schema = json!({"type": "array"});
        not_object.examples.clear();
        let err = Registry::new()
            .register(DynamicTool::new(not_object, |_c, i| async move {
                Ok::<_, String>(i)
            }))
            .unwrap_err();
        assert!(err.to_string().contains("root must be"), "{err}");

        let mut bad_schema = spec.clone();
        bad_schema.output_schema = json!({"type": 7});
        bad_schema.examples.clear();
        let err = Registry::new()
            .register(DynamicTool::new(bad_schema, |_c, i| async move {
                Ok::<_, String>(i)
            }))
            .unwrap_err();
        assert!(err.to_string().contains("output schema"), "{err}");

        let mut bad_key = spec;
        bad_key.idempotency_key = Some("order".into());
        let err = Registry::new()
            .register(DynamicTool::new(bad_key, |_c, i| async move {
                Ok::<_, String>(i)
            }))
            .unwrap_err();
        assert!(err.to_string().contains("idempotency_key `order`"), "{err}");
    }
}
