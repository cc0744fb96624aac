//! The caller's context, handed to every call.
//!
//! A [`ToolContext`] carries what a call needs from its caller but is not part of the
//! tool's input: the caller's [`Capabilities`] (checked at the door) and shared
//! resources such as a database pool or an HTTP client. A tool receives it by declaring
//! a `&ToolContext` parameter, or receives one resource by declaring a
//! [`Resource<T>`] parameter; neither appears in the tool's input schema.
//!
//! A context is cheap to clone (it is reference-counted) and immutable once built.

use std::any::{type_name, Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::capability::Capabilities;

/// What a call needs from its caller: capabilities and shared resources.
#[derive(Clone, Default)]
pub struct ToolContext {
    inner: Arc<ContextInner>,
}

#[derive(Clone, Default)]
struct ContextInner {
    capabilities: Capabilities,
    resources: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("capabilities", &self.inner.capabilities)
            .field("resources", &self.inner.resources.len())
            .finish()
    }
}

impl ToolContext {
    /// A context with no grants and no resources.
    pub fn new() -> ToolContext {
        ToolContext::default()
    }

    /// Adds a grant (an exact permission or a `*` glob, see [`Capabilities`]).
    pub fn grant(mut self, pattern: impl Into<String>) -> ToolContext {
        let inner = Arc::make_mut(&mut self.inner);
        inner.capabilities = std::mem::take(&mut inner.capabilities).grant(pattern);
        self
    }

    /// Replaces the grants.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> ToolContext {
        Arc::make_mut(&mut self.inner).capabilities = capabilities;
        self
    }

    /// The caller's grants.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.capabilities
    }

    /// Adds a shared resource, found later by its type. A second value of the same
    /// type replaces the first.
    pub fn with_resource<T: Send + Sync + 'static>(mut self, value: T) -> ToolContext {
        Arc::make_mut(&mut self.inner)
            .resources
            .insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The resource of type `T`, or an error naming the type when the caller did not
    /// provide one.
    pub fn resource<T: Send + Sync + 'static>(&self) -> Result<Resource<T>, MissingResource> {
        self.inner
            .resources
            .get(&TypeId::of::<T>())
            .and_then(|r| Arc::clone(r).downcast::<T>().ok())
            .map(Resource)
            .ok_or(MissingResource {
                type_name: type_name::<T>(),
            })
    }
}

/// A shared resource taken from the caller's [`ToolContext`].
///
/// As a tool parameter (`db: Resource<Db>`) it is injected by the door and is not part
/// of the input schema; when the caller's context has no `Db`, the call fails with a
/// `MissingContext` error before the tool runs.
pub struct Resource<T>(Arc<T>);

impl<T> Resource<T> {
    /// The shared pointer to the resource, to keep it beyond the call.
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T> Deref for Resource<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for Resource<T> {
    fn clone(&self) -> Self {
        Resource(Arc::clone(&self.0))
    }
}

impl<T: fmt::Debug> fmt::Debug for Resource<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A resource was asked for that the caller's context does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the context holds no resource of type `{type_name}`; add one with ToolContext::with_resource"
)]
pub struct MissingResource {
    /// The Rust type that was asked for.
    pub type_name: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Db(u32);

    #[test]
    fn grants_and_resources() {
        let base = ToolContext::new().grant("a:*");
        let ctx = base.clone().grant("b").with_resource(Db(7));
        assert!(ctx.capabilities().allows("a:x"));
        assert!(ctx.capabilities().allows("b"));
        assert!(
            !base.capabilities().allows("b"),
            "contexts are values: the base is unchanged"
        );
        assert_eq!(*ctx.resource::<Db>().unwrap(), Db(7));
        let missing = base.resource::<Db>().unwrap_err();
        assert!(missing.to_string().contains("Db"), "{missing}");
    }
}
