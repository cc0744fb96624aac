//! Finding tools: filtered search ([`ToolQuery`]) and "did you mean" suggestions for
//! keys that do not resolve.

use super::tool::Tool;
use super::Registry;

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
    pub fn with_name_containing(mut self, text: impl Into<String>) -> ToolQuery {
        self.name_contains = Some(text.into().to_lowercase());
        self
    }

    /// The tool has at least one of these tags.
    pub fn with_any_tag<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> ToolQuery {
        self.any_tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The tool has every one of these tags.
    pub fn with_all_tags<S: Into<String>>(
        mut self,
        tags: impl IntoIterator<Item = S>,
    ) -> ToolQuery {
        self.all_tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Includes deprecated tools, which are hidden otherwise.
    pub fn with_deprecated(mut self, yes: bool) -> ToolQuery {
        self.include_deprecated = yes;
        self
    }

    pub(super) fn matches(&self, tool: &Tool) -> bool {
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

/// The longest query that gets "did you mean" suggestions: 256 bytes.
pub const SUGGEST_MAX_LEN: usize = 256;

impl Registry {
    /// Up to three keys close to `query`, closest first. A query much longer than any
    /// key (more than [`SUGGEST_MAX_LEN`] characters) gets none: comparing it would cost
    /// time in proportion to its length, and nothing is close to it anyway.
    pub(super) fn suggest(&self, query: &str) -> Vec<String> {
        if query.len() > SUGGEST_MAX_LEN {
            return Vec::new();
        }
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
}
