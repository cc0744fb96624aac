//! The names of tools for one provider, both ways ([`ProviderNames`]), the names no
//! chat provider's tool is given ([`RESERVED_NAMES`]), and why a set of keys cannot be
//! named ([`ProviderNameError`], [`NameTaken`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Provider;

/// Names a client library turns into one of the provider's own built-in tools, so a
/// tool of ours given one would not reach its door: genai 0.7.2 sends a tool named
/// `web_search` to Anthropic as Anthropic's web search (`"type": "web_search_20250305"`,
/// without the tool's description and schema) and to the OpenAI Responses API as
/// `{"type": "web_search"}`, and a tool named `googleSearch`, `googleSearchRetrieval`,
/// `codeExecution` or `urlContext` to Gemini as that built-in tool.
///
/// [`ProviderNames`] never gives a tool of a chat provider (any but
/// [`Provider::Mcp`], whose names are a protocol's, not a model's) one of these: the
/// tool gets the first of `{name}_v{version}`, `{name}_tool`, `{name}_tool_2`, ...
/// that no other key has (`web.search@1` is offered as `web_search_v1`).
pub const RESERVED_NAMES: &[&str] = &[
    "web_search",
    "googleSearch",
    "googleSearchRetrieval",
    "codeExecution",
    "urlContext",
];

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
    /// (`_v2`) only where a path has several versions, or where the name would be one
    /// of the [`RESERVED_NAMES`] (for any provider but MCP).
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
        let wanted: Vec<(&str, String)> = keys
            .iter()
            .map(|key| {
                let (path, version) = key.split_once('@').unwrap_or((key, ""));
                let name = if per_path.get(path) == Some(&1) {
                    provider.name_for(key)
                } else {
                    provider.name_for(&format!("{path}_v{version}"))
                };
                (*key, name)
            })
            .collect();
        // A reserved name's stand-in is no name another key wants.
        let natural: HashSet<&str> = wanted.iter().map(|(_, name)| name.as_str()).collect();
        let mut names = ProviderNames::empty(provider);
        for (key, name) in &wanted {
            let key = *key;
            let name = names.unreserved(key, name, |n| {
                natural.contains(n) || names.to_key.contains_key(n)
            });
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
    /// collision; a name of the [`RESERVED_NAMES`] gets a stand-in, as in
    /// [`new`](Self::new)), for names given one at a time, as an agent offers tools;
    /// the length is checked by [`new`](Self::new) only. Adding a key again gives its
    /// name again.
    pub fn insert(&mut self, key: &str) -> Result<&str, NameTaken> {
        if self.to_name.contains_key(key) {
            return Ok(&self.to_name[key]);
        }
        let name = self.unreserved(key, &self.provider.name_for(key), |n| {
            self.to_key.contains_key(n)
        });
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
            // Another key's full name already (a provider whose names hold no `.`), or
            // a name a client library makes a built-in tool of.
            if self.to_key.get(&bare).is_some_and(|other| *other != key) || self.is_reserved(&bare)
            {
                continue;
            }
            if let Some(old) = self.to_name.insert(key.clone(), bare.clone()) {
                self.to_key.remove(&old);
            }
            self.to_key.insert(bare, key);
        }
        self
    }

    /// Whether `name` is one this provider's tools are never given
    /// ([`RESERVED_NAMES`]; none for MCP).
    pub fn is_reserved(&self, name: &str) -> bool {
        self.provider != Provider::Mcp && RESERVED_NAMES.contains(&name)
    }

    /// `name` for `key`, or when it is reserved ([`is_reserved`](Self::is_reserved)),
    /// the first of `{name}_v{version}`, `{name}_tool`, `{name}_tool_2`, ... that is not
    /// `taken`.
    fn unreserved(&self, key: &str, name: &str, taken: impl Fn(&str) -> bool) -> String {
        if !self.is_reserved(name) {
            return name.to_owned();
        }
        let versioned = key
            .split_once('@')
            .filter(|(_, version)| !version.is_empty())
            .map(|(_, version)| self.provider.name_for(&format!("{name}_v{version}")));
        versioned
            .into_iter()
            .chain(std::iter::once(format!("{name}_tool")))
            .chain((2..).map(|n| format!("{name}_tool_{n}")))
            .find(|candidate| !taken(candidate) && !self.is_reserved(candidate))
            .expect("an endless list of names holds a free one")
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
