//! MCP-legal tool names and the way back to registry keys.
//!
//! A registry key (`namespace.name@version`) holds an `@`, which MCP tool names may
//! not: they are 1 to 128 characters from `A-Z a-z 0-9 _ - .`. A served tool is named
//! `namespace.name` when it is the only version of that path, and
//! `namespace.name_v<version>` otherwise (other characters become `_`). The map keeps
//! both directions and refuses two keys that would get one name. The naming is
//! [`ProviderNames`] for [`Provider::Mcp`], shared with the agents' provider forms.

use std::collections::{BTreeMap, HashMap};

use tackle_agent::agent::providers::{Provider, ProviderNameError, ProviderNames};

use crate::McpError;

/// Served names, both ways. See the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    to_key: HashMap<String, String>,
    to_name: BTreeMap<String, String>,
}

impl NameMap {
    /// Names for `keys` (`namespace.name@version`, as listed by the registry).
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<NameMap, McpError> {
        let names = NameMap::qualified(keys)?;
        Ok(NameMap {
            to_key: names
                .iter()
                .map(|(k, n)| (n.to_owned(), k.to_owned()))
                .collect(),
            to_name: names
                .iter()
                .map(|(k, n)| (k.to_owned(), n.to_owned()))
                .collect(),
        })
    }

    /// Names for `keys` by the tools' bare names (`name` of `namespace.name@version`)
    /// where only one key has that name, as servers written in other languages name
    /// their tools; the others as [`new`](Self::new) names them. A bare name holds no
    /// `.`, a qualified one always does, so the two never meet.
    pub fn bare<'a>(keys: impl IntoIterator<Item = &'a str> + Clone) -> Result<NameMap, McpError> {
        let mut map = NameMap::new(keys.clone())?;
        let bare_of = |key: &'a str| -> String {
            let path = key.split_once('@').map_or(key, |(p, _)| p);
            let name = path.rsplit_once('.').map_or(path, |(_, n)| n);
            Provider::Mcp.name_for(name)
        };
        let mut counts: HashMap<String, usize> = HashMap::new();
        for key in keys.clone() {
            *counts.entry(bare_of(key)).or_default() += 1;
        }
        for key in keys {
            let bare = bare_of(key);
            if counts.get(&bare) == Some(&1) && !bare.is_empty() {
                if let Some(old) = map.to_name.insert(key.to_owned(), bare.clone()) {
                    map.to_key.remove(&old);
                }
                map.to_key.insert(bare, key.to_owned());
            }
        }
        Ok(map)
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
        self.to_key.get(name).map(String::as_str)
    }

    /// The MCP name of `key`.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.to_name.get(key).map(String::as_str)
    }

    /// `(key, name)` pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.to_name.iter().map(|(k, n)| (k.as_str(), n.as_str()))
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
