//! The registry: every tool the program can call, keyed `namespace.name@version`.
//!
//! `#[tool]` functions register themselves at link time (through `inventory`), so the
//! registry is built at start-up by [`Registry::from_inventory`] with no list to keep
//! in sync. Tools made at run time (a closure plus a hand-written [`ToolSpec`](crate::spec::ToolSpec), or a
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
//! first-party > trusted > untrusted > mcp (a tie is still an error). A tool
//! registered at run time never takes a gated tool's key or `namespace.name` unless it
//! requires the same permissions or opts in ([`collision`] has the rules).
//!
//! The parts: [`tool`] (a registered tool and its code), [`collision`] (taken names),
//! [`query`] (search and suggestions); the link-time registrations themselves are in
//! [`crate::abi`].

pub mod collision;
pub mod live;
pub mod query;
pub mod tool;
pub mod toolset;
pub mod warn;

use std::sync::Arc;

pub use crate::abi::{registrations, ToolFuture, ToolRegistration};
pub use crate::audit::{ToolChange, ToolChangeKind};
pub use collision::{CollisionNote, CollisionStrategy};
pub use live::LiveTools;
pub use query::ToolQuery;
pub(crate) use tool::HandlerKind;
pub use tool::{ApprovalPredicate, DynamicTool, IdempotencyKeyFn, Tool, ToolHandler};
pub use toolset::{BoundTool, IntoToolset, Toolset};

use crate::error::{RegistryError, ToolError, ToolOrigin};
use crate::keyhash::KeyMap;
use crate::version::compare_versions;
use collision::Placement;

/// What a query names in the registry.
enum Found<'a> {
    Tool(&'a Arc<Tool>),
    Ambiguous(Vec<String>),
    Missing,
}

/// Every callable tool. See the [module docs](self).
///
/// ```
/// use serde_json::json;
/// use tackle::{tool, registry::DynamicTool, Registry, SideEffects, ToolSpec};
///
/// /// Adds two integers.
/// #[tool(namespace = "math", side_effects = none)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// let mut registry = Registry::from_inventory()?; // every #[tool] linked in
/// let spec = ToolSpec::new("text", "shout", "1", SideEffects::None, "Upper-cases a text.");
/// registry.register(DynamicTool::new(spec, |_ctx, input| async move {
///     Ok::<_, String>(json!(input["text"].as_str().unwrap_or("").to_uppercase()))
/// }))?;
/// assert_eq!(registry.resolve("math.add")?.key(), "math.add@1");
/// assert_eq!(registry.resolve("shout")?.key(), "text.shout@1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    strategy: CollisionStrategy,
    tools: Vec<Arc<Tool>>,
    // FNV rather than SipHash: lookups are of short keys into a table the program
    // built, so crafted queries cannot make chains long; SipHash cost more than the
    // rest of a lookup.
    by_key: KeyMap<String, usize>,
    /// `namespace.name` -> indices, highest version first.
    by_path: KeyMap<String, Vec<usize>>,
    /// bare name -> `namespace.name` paths that have it.
    by_name: KeyMap<String, Vec<String>>,
    /// The length of the longest key: a longer query names nothing (and is not hashed).
    longest_key: usize,
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

    /// The `#[tool]`s linked into the program that were written in `module` or in a
    /// module inside it, with [`CollisionStrategy::Error`]: `module` is a path as
    /// `module_path!()` gives it (`my_app::billing` takes the tools of
    /// `my_app::billing` and `my_app::billing::invoices`, not `my_app::billing_v2`).
    ///
    /// One program can so hold several tool sets apart (the tools of one agent, of
    /// one test module) while every tool still registers at link time.
    ///
    /// ```
    /// # use tackle::{tool, Registry};
    /// mod billing {
    ///     /// Today's total.
    ///     #[tackle::tool(namespace = "billing", side_effects = none)]
    ///     pub fn total() -> u32 {
    ///         42
    ///     }
    /// }
    /// mod billing_v2 {
    ///     /// A module whose name only starts like the other's.
    ///     #[tackle::tool(namespace = "billing", side_effects = none)]
    ///     pub fn draft() -> u32 {
    ///         7
    ///     }
    /// }
    /// /// Unrelated.
    /// #[tool(namespace = "misc", side_effects = none)]
    /// fn other() -> u32 {
    ///     1
    /// }
    ///
    /// let billing = Registry::from_inventory_in(&format!("{}::billing", module_path!()))?;
    /// assert!(billing.get("billing.total@1").is_some());
    /// assert!(billing.get("billing.draft@1").is_none());
    /// assert!(billing.get("misc.other@1").is_none());
    /// // The whole program's: all three.
    /// assert_eq!(Registry::from_inventory_in(module_path!())?.len(), 3);
    /// # Ok::<(), tackle::error::RegistryError>(())
    /// ```
    pub fn from_inventory_in(module: &str) -> Result<Registry, RegistryError> {
        Registry::from_registrations(
            registrations().filter(|registration| registration.is_in(module)),
            CollisionStrategy::Error,
        )
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
            // The program's own tools, compiled in: they may take any name.
            registry.insert(Tool::from_registration(reg), true)?;
        }
        registry.reindex();
        Ok(registry)
    }

    /// Adds a run-time tool. Returns the key it was registered under (which differs
    /// from its spec's key only when [`CollisionStrategy::AutoPrefix`] moved it).
    pub fn register(&mut self, tool: DynamicTool) -> Result<String, RegistryError> {
        let key = self.insert_dynamic(tool)?;
        self.reindex();
        Ok(key)
    }

    /// Checks a run-time tool and adds it (unsorted; the caller reindexes).
    fn insert_dynamic(&mut self, tool: DynamicTool) -> Result<String, RegistryError> {
        let takeover = tool.gated_takeover;
        warn::check(&tool.spec, tool.idempotency_fn.is_some());
        let idempotency_fn = tool.idempotency_fn;
        let mut tool = Tool::from_written(
            tool.spec,
            tool.handler,
            ToolOrigin::Dynamic {
                source: tool.source,
            },
            tool.approval_when,
        );
        tool.idempotency_fn = idempotency_fn;
        self.insert(tool, takeover)
    }

    /// Adds run-time tools in one step, as [`register`](Self::register) adds one, and
    /// returns their keys in the order given. All or nothing: the first tool that
    /// cannot be registered is the error, and none of them is added. The lookup
    /// tables are rebuilt once, not once per tool, so adding `n` tools takes time
    /// linear in `n` (and in the tools already there), where `n` calls of `register`
    /// take time quadratic in it.
    pub fn register_all(
        &mut self,
        tools: impl IntoIterator<Item = DynamicTool>,
    ) -> Result<Vec<String>, RegistryError> {
        let mut next = self.clone();
        let tools = tools.into_iter();
        let mut keys = Vec::with_capacity(tools.size_hint().0);
        for tool in tools {
            keys.push(next.insert_dynamic(tool)?);
        }
        next.reindex();
        *self = next;
        Ok(keys)
    }

    /// Removes every tool `remove` says to remove, and returns them (in listing
    /// order). The lookup tables are rebuilt once, however many are removed.
    pub fn unregister_where(&mut self, mut remove: impl FnMut(&Tool) -> bool) -> Vec<Arc<Tool>> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.tools.len());
        for tool in std::mem::take(&mut self.tools) {
            if remove(&tool) {
                removed.push(tool);
            } else {
                kept.push(tool);
            }
        }
        self.tools = kept;
        if !removed.is_empty() {
            self.reindex();
        }
        removed
    }

    /// Adds the tools of a [`Toolset`] (a value whose `#[tools]` methods are tools),
    /// each bound to `set`. Returns their keys. All or nothing: a key another tool
    /// already has is [`RegistryError::DuplicateKey`] naming both definitions (under
    /// the default [`CollisionStrategy`]), and no tool of the set is added. Its tools
    /// are the program's own code, so, as `#[tool]` functions, they may take any name
    /// the strategy allows.
    pub fn add_toolset<S: IntoToolset>(&mut self, set: S) -> Result<Vec<String>, RegistryError> {
        let bound = S::Set::bound_tools(&set.into_shared());
        let mut next = self.clone();
        let mut keys = Vec::with_capacity(bound.len());
        for tool in bound {
            keys.push(next.insert(Tool::from_bound(tool), true)?);
        }
        next.reindex();
        *self = next;
        Ok(keys)
    }

    /// Removes a tool and returns it: by its key, its `namespace.name` (the highest
    /// version) or a unique bare name, as [`get`](Self::get) finds it.
    pub fn unregister(&mut self, key: &str) -> Result<Arc<Tool>, RegistryError> {
        let not_registered = || RegistryError::NotRegistered {
            key: key.to_owned(),
        };
        let index = match self.by_key.get(key) {
            Some(index) => *index,
            // `namespace.name` or a unique bare name, as `get` takes them.
            None => {
                let found = self.resolve(key).map_err(|_| not_registered())?;
                *self.by_key.get(found.key()).ok_or_else(not_registered)?
            }
        };
        let tool = self.tools.remove(index);
        self.reindex();
        Ok(tool)
    }

    /// Checks a tool and adds it (unsorted; the caller reindexes to sort). Returns its
    /// key. `takeover` says whether it may displace a gated tool (see [`collision`]).
    /// The lookup tables take the tool at once, so that the next insertion's checks
    /// see it before the reindex.
    fn insert(&mut self, mut tool: Tool, takeover: bool) -> Result<String, RegistryError> {
        tool.check()?;
        let placement = collision::place(self, &mut tool)?;
        if !takeover {
            collision::check_gated_takeover(self, &tool, &placement)?;
        }
        let key = tool.key.clone();
        match placement {
            Placement::Keep(kept) => return Ok(kept),
            // The same key: the same path, name and version, so the tables stand.
            Placement::Replace(index) => self.tools[index] = Arc::new(tool),
            Placement::Add => {
                let index = self.tools.len();
                self.by_key.insert(key.clone(), index);
                self.longest_key = self.longest_key.max(key.len());
                let versions = self.by_path.entry(tool.path.clone()).or_default();
                if versions.is_empty() {
                    self.by_name
                        .entry(tool.meta.name.clone())
                        .or_default()
                        .push(tool.path.clone());
                }
                // Highest version first, as `reindex` orders them.
                let tools = &self.tools;
                let at = versions
                    .iter()
                    .position(|&i| {
                        compare_versions(&tool.meta.version, &tools[i].meta.version)
                            == std::cmp::Ordering::Greater
                    })
                    .unwrap_or(versions.len());
                versions.insert(at, index);
                self.tools.push(Arc::new(tool));
            }
        }
        Ok(key)
    }

    /// This registry with `other`'s tools added, except those whose key or
    /// `namespace.name` it already has (as [`Runtime::tools`](crate::Runtime::tools)
    /// lists fixed and live tools: a fixed tool wins what the door would give it).
    pub(crate) fn with_tools_of(&self, other: &Registry) -> Registry {
        let mut both = self.clone();
        for tool in other.list() {
            if !self.by_key.contains_key(tool.key()) && !self.by_path.contains_key(&tool.path) {
                both.by_key.insert(tool.key.clone(), both.tools.len());
                both.tools.push(Arc::clone(tool));
            }
        }
        both.reindex();
        both
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
        self.longest_key = self.tools.iter().map(|t| t.key.len()).max().unwrap_or(0);
    }

    /// Finds a tool by key, `namespace.name` (highest version) or unique bare name.
    /// `NotFound` suggests the closest keys; `Ambiguous` lists the candidates.
    pub fn resolve(&self, query: &str) -> Result<&Arc<Tool>, ToolError> {
        match self.find(query) {
            Found::Tool(tool) => Ok(tool),
            Found::Ambiguous(candidates) => Err(ToolError::Ambiguous {
                query: query.to_owned(),
                candidates,
            }),
            Found::Missing => Err(ToolError::NotFound {
                query: clip(query),
                suggestions: self.suggest(query),
                registry_empty: self.tools.is_empty(),
            }),
        }
    }

    /// Whether `query` names nothing here (not even ambiguously).
    pub(crate) fn names_nothing(&self, query: &str) -> bool {
        matches!(self.find(query), Found::Missing)
    }

    /// Like [`Registry::resolve`], without the error (and without looking for
    /// suggestions).
    pub fn get(&self, query: &str) -> Option<&Tool> {
        match self.find(query) {
            Found::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    /// What a query names. (See also [`clip`].)
    fn find(&self, query: &str) -> Found<'_> {
        if query.len() > self.longest_key {
            return Found::Missing;
        }
        if let Some(&i) = self.by_key.get(query) {
            return Found::Tool(&self.tools[i]);
        }
        if query.contains('@') {
            return Found::Missing;
        }
        if let Some(&i) = self.by_path.get(query).and_then(|v| v.first()) {
            return Found::Tool(&self.tools[i]);
        }
        let Some(paths) = self.by_name.get(query) else {
            return Found::Missing;
        };
        let highest = |p: &String| {
            self.by_path
                .get(p)
                .and_then(|v| v.first())
                .map(|&i| &self.tools[i])
        };
        if let [path] = paths.as_slice() {
            if let Some(tool) = highest(path) {
                return Found::Tool(tool);
            }
        }
        Found::Ambiguous(
            paths
                .iter()
                .filter_map(highest)
                .map(|t| t.key.clone())
                .collect(),
        )
    }

    /// Every tool, sorted by namespace, name and version.
    pub fn list(&self) -> impl ExactSizeIterator<Item = &Arc<Tool>> {
        self.tools.iter()
    }

    /// The tools matching a query, in listing order.
    pub fn search(&self, query: &ToolQuery) -> Vec<&Arc<Tool>> {
        self.tools.iter().filter(|t| query.matches(t)).collect()
    }

    /// Every tool's key, sorted as strings (codomyrmex's `list_names`: so
    /// `a.t@1.10.0` comes before `a.t@1.9.0`, unlike the listing order).
    pub fn list_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.key.clone()).collect();
        names.sort_unstable();
        names
    }

    /// Whether `name` (a key, `namespace.name` or a unique bare name) names a tool
    /// (codomyrmex's `in`).
    pub fn contains(&self, name: &str) -> bool {
        matches!(self.find(name), Found::Tool(_))
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

/// A query as an error repeats it: whole up to 256 bytes, else its start and its
/// length (a megabyte-long key is not worth repeating).
fn clip(query: &str) -> String {
    if query.len() <= query::SUGGEST_MAX_LEN {
        return query.to_owned();
    }
    let mut end = query::SUGGEST_MAX_LEN;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &query[..end], query.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SideEffects, ToolExample, ToolSpec, Trust};
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
        r.register(tool("m", "t", "1").with_source("first"))
            .unwrap();
        let err = r
            .register(tool("m", "t", "1").with_source("second"))
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
            .register(tool("m", "t", "1").with_source("mcp:weather"))
            .unwrap();
        assert_eq!(key, "mcp_weather.m.t@1");
        let key = r
            .register(tool("m", "t", "1").with_source("mcp:weather"))
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
            DynamicTool::new(spec, |_c, i| async move { Ok::<_, String>(i) }).with_source(source)
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
            names(&ToolQuery::new().with_name_containing("readf")),
            ["ReadFile"]
        );
        assert_eq!(
            names(&ToolQuery::new().with_any_tag(["write", "nope"])),
            ["write_file"]
        );
        assert_eq!(
            names(&ToolQuery::new().with_all_tags(["fs", "read"])),
            ["ReadFile"]
        );
        assert_eq!(
            names(
                &ToolQuery::new()
                    .with_all_tags(["fs", "read"])
                    .with_deprecated(true)
            ),
            ["ReadFile", "old_read"]
        );
        assert_eq!(
            names(
                &ToolQuery::new()
                    .with_name_containing("READ")
                    .with_deprecated(true)
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
    fn a_batch_registers_as_one_by_one_does_all_or_nothing() {
        let batch = || {
            vec![
                tool("math", "add", "10"),
                tool("a", "z", "1"),
                tool("math", "add", "2"),
                tool("math", "abs", "1"),
            ]
        };
        let mut r = registry(vec![tool("text", "upper", "1")]);
        let keys = r.register_all(batch()).unwrap();
        assert_eq!(keys, ["math.add@10", "a.z@1", "math.add@2", "math.abs@1"]);
        let one_by_one = registry(
            std::iter::once(tool("text", "upper", "1"))
                .chain(batch())
                .collect(),
        );
        let listed = |r: &Registry| r.list().map(|t| t.key().to_owned()).collect::<Vec<_>>();
        assert_eq!(listed(&r), listed(&one_by_one));
        assert_eq!(r.resolve("math.add").unwrap().key(), "math.add@10");
        assert_eq!(r.resolve("upper").unwrap().key(), "text.upper@1");
        assert!(r.get("math.add@11").is_none());

        // A key taken twice in one batch, or one already there: nothing is added.
        let err = r
            .register_all(vec![tool("b", "x", "1"), tool("b", "x", "1")])
            .unwrap_err();
        assert!(matches!(err, RegistryError::DuplicateKey { .. }), "{err}");
        let err = r
            .register_all(vec![tool("b", "y", "1"), tool("a", "z", "1")])
            .unwrap_err();
        assert!(matches!(err, RegistryError::DuplicateKey { .. }), "{err}");
        assert_eq!(listed(&r), listed(&one_by_one));

        // A later tool in the batch sees the earlier ones: an ungated higher version
        // of a gated tool added in the same batch is refused.
        let mut gated = ToolSpec::new("adm", "wipe", "1", SideEffects::None, "d");
        gated.permissions = vec!["adm:wipe".to_owned()];
        let gated = DynamicTool::new(gated, |_c, i| async move { Ok::<_, String>(i) });
        let err = r
            .register_all(vec![gated, tool("adm", "wipe", "2")])
            .unwrap_err();
        assert!(matches!(err, RegistryError::GatedTakeover { .. }), "{err}");
        assert!(r.get("adm.wipe").is_none());

        let removed = r.unregister_where(|t| t.spec().namespace == "math");
        assert_eq!(removed.len(), 3);
        assert_eq!(listed(&r), ["a.z@1", "text.upper@1"]);
        assert!(r.resolve("add").is_err());
        assert!(r.unregister_where(|_| false).is_empty());
    }

    /// Registering many tools in one batch takes time linear in their number: 10,000
    /// in one batch are no slower per tool than 1,000 (within a wide margin, the
    /// better of two runs each), where one by one the time per tool grew with the
    /// registry.
    #[test]
    fn a_batch_of_many_tools_takes_linear_time() {
        let per_tool = |n: usize| {
            let runs = (0..2).map(|_| {
                let tools: Vec<_> = (0..n)
                    .map(|i| tool("bulk", &format!("t{i}"), "1"))
                    .collect();
                let started = std::time::Instant::now();
                let mut r = Registry::new();
                r.register_all(tools).unwrap();
                assert_eq!(r.len(), n);
                started.elapsed().as_secs_f64() / n as f64
            });
            runs.fold(f64::INFINITY, f64::min)
        };
        let small = per_tool(1_000);
        let large = per_tool(10_000);
        assert!(
            large < small * 4.0 + 1e-5,
            "{:.1} us a tool for 10,000, {:.1} us for 1,000",
            large * 1e6,
            small * 1e6
        );
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
