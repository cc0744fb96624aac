//! MCP-legal tool names and the way back to registry keys.
//!
//! A registry key (`namespace.name@version`) holds an `@`, which MCP tool names may
//! not: they are 1 to 128 characters from `A-Z a-z 0-9 _ - .`. A served tool is named
//! `namespace.name` when it is the only version of that path, and
//! `namespace.name_v<version>` otherwise (other characters become `_`). The map keeps
//! both directions and refuses two keys that would get one name. The naming is
//! [`ProviderNames`] for [`Provider::Mcp`], shared with the agents' provider forms.

use tackle_agent::providers::{Provider, ProviderNameError, ProviderNames};

use crate::McpError;

/// Served names, both ways: [`ProviderNames`] for [`Provider::Mcp`], with the
/// errors of serving. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameMap(ProviderNames);

impl Default for NameMap {
    fn default() -> NameMap {
        NameMap(ProviderNames::empty(Provider::Mcp))
    }
}

impl NameMap {
    /// Names for `keys` (`namespace.name@version`, as listed by the registry).
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<NameMap, McpError> {
        NameMap::qualified(keys).map(NameMap)
    }

    /// Names for `keys` by the tools' bare names (`name` of `namespace.name@version`)
    /// where only one key has that name, as servers written in other languages name
    /// their tools; the others as [`new`](Self::new) names them
    /// ([`ProviderNames::with_bare_names`]).
    pub fn bare<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<NameMap, McpError> {
        Ok(NameMap(NameMap::qualified(keys)?.with_bare_names()))
    }

    /// The provider's qualified names for `keys`.
    fn qualified<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<ProviderNames, McpError> {
        ProviderNames::new(Provider::Mcp, keys).map_err(|e| match e {
            ProviderNameError::TooLong { key, name, .. } => McpError::NameTooLong { key, name },
            ProviderNameError::Collision {
                name,
                first,
                second,
                ..
            } => McpError::NameCollision {
                name,
                first,
                second,
            },
            other => McpError::Serve(other.to_string()),
        })
    }

    /// The registry key served under `name`.
    pub fn key_of(&self, name: &str) -> Option<&str> {
        self.0.key_of(name)
    }

    /// The MCP name of `key`.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.0.name_of(key)
    }

    /// `(key, name)` pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_legal_short_when_unique_and_reversible() {
        let map = NameMap::new(["math.add@1", "text.count@1", "text.count@2.0+b"]).unwrap();
        assert_eq!(map.name_of("math.add@1"), Some("math.add"));
        assert_eq!(map.name_of("text.count@1"), Some("text.count_v1"));
        assert_eq!(map.name_of("text.count@2.0+b"), Some("text.count_v2.0_b"));
        for (key, name) in map.iter() {
            assert_eq!(map.key_of(name), Some(key));
            assert!(name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)));
        }
    }

    #[test]
    fn bare_names_where_unique() {
        let map = NameMap::bare(["test.simple_text@1", "a.count@1", "b.count@1"]).unwrap();
        assert_eq!(map.name_of("test.simple_text@1"), Some("simple_text"));
        assert_eq!(map.key_of("simple_text"), Some("test.simple_text@1"));
        assert_eq!(map.name_of("a.count@1"), Some("a.count"));
        assert_eq!(map.key_of("a.count"), Some("a.count@1"));
        assert_eq!(map.key_of("test.simple_text"), None);
    }

    #[test]
    fn two_keys_with_one_name_are_refused() {
        let err = NameMap::new(["a.b_v1@x", "a.b@1", "a.b@2"]).unwrap_err();
        assert!(err.to_string().contains("`a.b_v1`"), "{err}");
    }
}
