//! Tools with state: a value whose methods are tools.
//!
//! A `#[tool]` function registers at link time and reaches what it needs through its
//! parameters, the caller's context or a [`Resource`](crate::context::Resource). A tool
//! that needs a database handle or one tenant's client is more naturally a method: put
//! `#[tools]` on an `impl` block and `#[tool]` on its methods that take `&self`, and
//! the value is a [`Toolset`]: it holds the tools and their state. It is added to a
//! registry at run time ([`Registry::add_toolset`](super::Registry::add_toolset),
//! [`Runtime::with_toolset`](crate::Runtime::with_toolset)), as many times as there
//! are values (one per tenant, one per test) in as many registries, and its tools are
//! then tools like any other: the same schemas and specs as a `#[tool]` function's, the
//! same door, replay and MCP serving. A key taken twice is an error naming both sources.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use serde_json::json;
//! use tackle::{tool, tools, Runtime, ToolContext};
//!
//! /// A counter of one tenant.
//! struct Counter {
//!     count: AtomicU64,
//! }
//!
//! #[tools(namespace = "counter")]
//! impl Counter {
//!     /// Adds `by` to the counter and returns its new value.
//!     #[tool(side_effects = write)]
//!     fn add(&self, by: u64) -> u64 {
//!         self.count.fetch_add(by, Ordering::SeqCst) + by
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let counter = Counter { count: AtomicU64::new(40) };
//! let runtime = Runtime::from_inventory()?.with_toolset(counter)?;
//! assert_eq!(Counter::ADD_KEY, "counter.add@1");
//! let out = runtime.call(Counter::ADD_KEY, json!({"by": 2}), &ToolContext::new()).await?;
//! assert_eq!(out, json!(42));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::abi::StaticSpec;
use crate::spec::ToolSpec;

use super::ToolHandler;

/// A value whose methods are tools: made by `#[tools]` on its `impl` block (see the
/// [module docs](self)). Add it to a registry with
/// [`Registry::add_toolset`](super::Registry::add_toolset) or
/// [`Runtime::with_toolset`](crate::Runtime::with_toolset).
pub trait Toolset: Send + Sync + Sized + 'static {
    /// The keys of the tools, in the order the methods are written.
    const TOOLS: &'static [&'static str];

    /// The tools of `set`, each bound to it. Written by `#[tools]`.
    fn bound_tools(set: &Arc<Self>) -> Vec<BoundTool>;
}

/// A toolset given by value or already shared: what
/// [`Registry::add_toolset`](super::Registry::add_toolset) and
/// [`Runtime::with_toolset`](crate::Runtime::with_toolset) take. Keep an `Arc` of a
/// toolset to reach its state from outside its tools too.
pub trait IntoToolset {
    /// The toolset.
    type Set: Toolset;

    /// The toolset, shared.
    fn into_shared(self) -> Arc<Self::Set>;
}

impl<T: Toolset> IntoToolset for T {
    type Set = T;

    fn into_shared(self) -> Arc<T> {
        Arc::new(self)
    }
}

impl<T: Toolset> IntoToolset for Arc<T> {
    type Set = T;

    fn into_shared(self) -> Arc<T> {
        self
    }
}

/// One tool of a [`Toolset`], bound to its value. Made by `#[tools]`'s expansion; not
/// built by hand.
pub struct BoundTool {
    pub(crate) key: &'static str,
    pub(crate) meta: &'static StaticSpec,
    pub(crate) spec: fn() -> ToolSpec,
    pub(crate) check_at_build: bool,
    pub(crate) handler: ToolHandler,
    pub(crate) type_name: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
}

impl BoundTool {
    /// Used by `#[tools]`'s expansion.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        key: &'static str,
        meta: &'static StaticSpec,
        spec: fn() -> ToolSpec,
        check_at_build: bool,
        handler: ToolHandler,
        type_name: &'static str,
        file: &'static str,
        line: u32,
    ) -> BoundTool {
        BoundTool {
            key,
            meta,
            spec,
            check_at_build,
            handler,
            type_name,
            file,
            line,
        }
    }

    /// The key the tool registers under.
    pub fn key(&self) -> &'static str {
        self.key
    }
}

impl fmt::Debug for BoundTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundTool")
            .field("key", &self.key)
            .field("type_name", &self.type_name)
            .field("file", &self.file)
            .field("line", &self.line)
            .finish()
    }
}
