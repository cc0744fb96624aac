//! MCP-legal tool names and the way back to registry keys.
//!
//! A registry key (`namespace.name@version`) holds an `@`, which MCP tool names may
//! not: they are 1 to 128 characters from `A-Z a-z 0-9 _ - .`. A served tool is named
//! `namespace.name` when it is the only version of that path, and
//! `namespace.name_v<version>` otherwise (other characters become `_`). The map keeps
//! both directions and refuses two keys that would get one name.

use std::collections::{BTreeMap, HashMap};

use crate::McpError;

/// The longest tool name MCP allows.
pub const MAX_NAME: usize = 128;

/// Replaces every character MCP does not allow in tool names with `_`.
pub fn legal(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Served names, both ways. See the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    to_key: HashMap<String, String>,
    to_name: BTreeMap<String, String>,
}

impl NameMap {
    /// Names for `keys` (`namespace.name@version`, as listed by the registry).
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<NameMap, McpError> {
        let keys: Vec<&str> = keys.into_iter().collect();
        let mut versions: HashMap<&str, usize> = HashMap::new();
        for key in &keys {
            let path = key.split_once('@').map_or(*key, |(p, _)| p);
            *versions.entry(path).or_default() += 1;
        }
        let mut map = NameMap::default();
        for key in keys {
            let (path, version) = key.split_once('@').unwrap_or((key, ""));
            let name = if versions.get(path) == Some(&1) {
                legal(path)
            } else {
                format!("{}_v{}", legal(path), legal(version))
            };
            if name.len() > MAX_NAME {
                return Err(McpError::NameTooLong {
                    key: key.to_owned(),
                    name,
                });
            }
            if let Some(first) = map.to_key.get(&name) {
                return Err(McpError::NameCollision {
                    name,
                    first: first.clone(),
                    second: key.to_owned(),
                });
            }
            map.to_key.insert(name.clone(), key.to_owned());
            map.to_name.insert(key.to_owned(), name);
        }
        Ok(map)
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
    fn two_keys_with_one_name_are_refused() {
        let err = NameMap::new(["a.b_v1@x", "a.b@1", "a.b@2"]).unwrap_err();
        assert!(err.to_string().contains("`a.b_v1`"), "{err}");
    }
}
