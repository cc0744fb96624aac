//! The names of tools for one provider, both ways ([`ProviderNames`]), and why a set
//! of keys cannot be named ([`ProviderNameError`], [`NameTaken`]).

use std::collections::{BTreeMap, HashMap};

use super::Provider;

/// Names of tools for one provider, both ways: the one map from registry keys to the
/// names a model or a client sees, and back. The provider forms name tools with it,
/// the ReAct loop names the tools it offers with it, and the MCP bridge names the
/// tools it serves with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderNames {
    provider: Provider,
    to_key: HashMap<String, String>,
    to_name: BTreeMap<String, String>,
}

/// Why a set of keys cannot be named for a provider.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderNameError {
    /// Two keys would have one name.
    #[error("for {provider}, `{first}` and `{second}` would both be named `{name}`")]
    Collision {
        /// The provider.
        provider: &'static str,
        /// The shared name.
        name: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
    /// A name would be longer than the provider accepts.
    #[error("for {provider}, `{key}` would be named `{name}`, longer than {max} characters")]
    TooLong {
        /// The provider.
        provider: &'static str,
        /// The key.
        key: String,
        /// The name.
        name: String,
        /// The provider's limit.
        max: usize,
    },
}

/// A name [`ProviderNames::insert`] found taken by another key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{first}` and `{second}` would both be named `{name}`")]
pub struct NameTaken {
    /// The name.
    pub name: String,
    /// The key that has it.
    pub first: String,
    /// The key that was refused it.
    pub second: String,
}

impl ProviderNames {
    /// No names yet, for `provider`: add them with [`insert`](Self::insert).
    pub fn empty(provider: Provider) -> ProviderNames {
        ProviderNames {
            provider,
            to_key: HashMap::new(),
            to_name: BTreeMap::new(),
        }
    }

    /// Names for `keys`: `namespace_name` (dots kept for MCP); the version is added
    /// (`_v2`) only where a path has several versions.
    pub fn new<'a>(
        provider: Provider,
        keys: impl IntoIterator<Item = &'a str>,
    ) -> Result<ProviderNames, ProviderNameError> {
        let keys: Vec<&str> = keys.into_iter().collect();
        let mut per_path: HashMap<&str, usize> = HashMap::new();
        for key in &keys {
            *per_path
                .entry(key.split_once('@').map_or(*key, |(p, _)| p))
                .or_default() += 1;
        }
        let mut names = ProviderNames::empty(provider);
        for key in keys {
            let (path, version) = key.split_once('@').unwrap_or((key, ""));
            let name = if per_path.get(path) == Some(&1) {
                provider.name_for(key)
            } else {
                provider.name_for(&format!("{path}_v{version}"))
            };
            if name.len() > provider.max_name_len() {
                return Err(ProviderNameError::TooLong {
                    provider: provider.as_str(),
                    key: key.to_owned(),
                    name,
                    max: provider.max_name_len(),
                });
            }
            if let Some(first) = names.to_key.get(&name) {
                return Err(ProviderNameError::Collision {
                    provider: provider.as_str(),
                    name,
                    first: first.clone(),
                    second: key.to_owned(),
                });
            }
            names.to_key.insert(name.clone(), key.to_owned());
            names.to_name.insert(key.to_owned(), name);
        }
        Ok(names)
    }

    /// Adds `key` under the provider's name for its path
    /// ([`Provider::name_for`]: no version, so a second version of one path is a
    /// collision), for names given one at a time, as an agent offers tools; the
    /// length is checked by [`new`](Self::new) only. Adding a key again gives its
    /// name again.
    pub fn insert(&mut self, key: &str) -> Result<&str, NameTaken> {
        let name = self.provider.name_for(key);
        match self.to_key.get(&name) {
            Some(first) if first != key => Err(NameTaken {
                name,
                first: first.clone(),
                second: key.to_owned(),
            }),
            _ => {
                self.to_key.insert(name.clone(), key.to_owned());
                Ok(self.to_name.entry(key.to_owned()).or_insert(name))
            }
        }
    }

    /// Each bare name (the `name` of `namespace.name@version`, in the provider's
    /// form) that only one of the named keys has, with that key: the short names
    /// servers written in other languages give their tools, and names a model may
    /// use for a tool it was offered under a longer one.
    pub fn unique_bare_names(&self) -> Vec<(String, &str)> {
        let mut by_bare: BTreeMap<String, Option<&str>> = BTreeMap::new();
        for key in self.to_name.keys() {
            let path = key.split_once('@').map_or(key.as_str(), |(p, _)| p);
            let bare = self
                .provider
                .name_for(path.rsplit_once('.').map_or(path, |(_, n)| n));
            by_bare
                .entry(bare)
                .and_modify(|k| *k = None)
                .or_insert(Some(key.as_str()));
        }
        by_bare
            .into_iter()
            .filter_map(|(bare, key)| key.filter(|_| !bare.is_empty()).map(|key| (bare, key)))
            .collect()
    }

    /// These names with each key whose bare name no other key has named by it
    /// ([`unique_bare_names`](Self::unique_bare_names)) instead. A bare name never
    /// holds a `.` and, for MCP, a qualified one always does, so the two never meet.
    pub fn with_bare_names(mut self) -> ProviderNames {
        let bare: Vec<(String, String)> = self
            .unique_bare_names()
            .into_iter()
            .map(|(bare, key)| (bare, key.to_owned()))
            .collect();
        for (bare, key) in bare {
            // Another key's full name already (a provider whose names hold no `.`).
            if self.to_key.get(&bare).is_some_and(|other| *other != key) {
                continue;
            }
            if let Some(old) = self.to_name.insert(key.clone(), bare.clone()) {
                self.to_key.remove(&old);
            }
            self.to_key.insert(bare, key);
        }
        self
    }

    /// The provider the names are for.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// How many keys are named.
    pub fn len(&self) -> usize {
        self.to_name.len()
    }

    /// Whether no key is named.
    pub fn is_empty(&self) -> bool {
        self.to_name.is_empty()
    }

    /// The key a name stands for.
    pub fn key_of(&self, name: &str) -> Option<&str> {
        self.to_key.get(name).map(String::as_str)
    }

    /// The name of a key.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.to_name.get(key).map(String::as_str)
    }

    /// `(key, name)` pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.to_name.iter().map(|(k, n)| (k.as_str(), n.as_str()))
    }
}
