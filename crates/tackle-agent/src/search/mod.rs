//! Tool search: finding the few tools a task needs among thousands.
//!
//! Offering a model ten thousand tool definitions is slow and expensive; offering the
//! ones that match the task is not. A [`ToolIndex`] is built once from a registry and
//! answers [`ToolIndex::search`] with the first of three tiers that finds anything
//! ([`SearchHit::tier`] says which):
//!
//! 1. **semantic**, when the index has an [`Embedder`]: tools ranked by the cosine
//!    similarity of their text to the query's, those above zero;
//! 2. **BM25** over each tool's words: its key, name, namespace, description, tags and
//!    parameter names and descriptions (split on non-alphanumerics and camel case,
//!    lowercased);
//! 3. a **name match**: tools whose name or key contains the query, then the names
//!    closest to it by edit distance.
//!
//! A ReAct run offers this search to its model as the tool `tool_search({query, k =
//! 5})` when some of its tools are deferred (`defer_loading`). Deprecated tools are
//! left out.
//!
//! [`salience`] is the other kind of search: which remembered episodes are worth
//! showing a model.

pub mod salience;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use tackle_core::registry::{Registry, Tool};

/// Turns text into a vector, for the embedder tier.
pub trait Embedder: Send + Sync {
    /// The embedding of `text`.
    fn embed(&self, text: &str) -> Vec<f32>;
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchHit {
    /// The tool's key.
    pub key: String,
    /// Its score (higher is better; comparable within one search only).
    pub score: f64,
    /// The tier that found it.
    pub tier: SearchTier,
}

/// The tiers of a search, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchTier {
    /// Cosine similarity of embeddings.
    Semantic,
    /// BM25 over the tools' words.
    Bm25,
    /// The query in a name, or a name close to it.
    Name,
}

/// Splits text into lowercase words, also at camel-case and `_`/`.`/`-` boundaries.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

struct Doc {
    key: String,
    name: String,
    len: f64,
    /// BM25's length normalization of this document, `K1 * (1 - B + B * len / avg)`,
    /// computed once when the index is built.
    norm: f64,
    vector: Option<Vec<f32>>,
}

/// A search index over a registry's tools. See the [module docs](self).
pub struct ToolIndex {
    docs: Vec<Doc>,
    /// word -> (document, term frequency)
    postings: HashMap<String, Vec<(u32, u32)>>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.docs.len())
            .field("words", &self.postings.len())
            .field("embedder", &self.embedder.is_some())
            .finish()
    }
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

fn schema_text(schema: &Value, out: &mut String) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            out.push(' ');
            out.push_str(name);
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(d);
            }
        }
    }
}

impl ToolIndex {
    /// Indexes every tool of `registry` that is not deprecated.
    pub fn build(registry: &Registry) -> ToolIndex {
        ToolIndex::build_with(registry, None)
    }

    /// Indexes `registry`, with an embedder for the third tier.
    pub fn build_with(registry: &Registry, embedder: Option<Arc<dyn Embedder>>) -> ToolIndex {
        ToolIndex::over(registry.list().map(|t| &**t), embedder)
    }

    /// Indexes the given tools (those not deprecated).
    pub fn over<'a>(
        tools: impl IntoIterator<Item = &'a Tool>,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> ToolIndex {
        let mut docs = Vec::new();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut total = 0.0;
        for tool in tools {
            let spec = tool.spec();
            if spec.deprecated {
                continue;
            }
            let mut text = format!(
                "{} {} {}",
                tool.key(),
                spec.description,
                spec.tags.join(" ")
            );
            schema_text(&spec.input_schema, &mut text);
            let tokens = words(&text);
            let index = docs.len() as u32;
            let mut counts: HashMap<&str, u32> = HashMap::new();
            for t in &tokens {
                *counts.entry(t.as_str()).or_default() += 1;
            }
            for (word, count) in counts {
                postings
                    .entry(word.to_owned())
                    .or_default()
                    .push((index, count));
            }
            total += tokens.len() as f64;
            docs.push(Doc {
                key: tool.key().to_owned(),
                name: spec.name.to_lowercase(),
                len: tokens.len() as f64,
                norm: 0.0,
                vector: embedder.as_ref().map(|e| e.embed(&text)),
            });
        }
        let avg_len = if docs.is_empty() {
            1.0
        } else {
            total / docs.len() as f64
        };
        for doc in &mut docs {
            doc.norm = K1 * (1.0 - B + B * doc.len / avg_len);
        }
        ToolIndex {
            docs,
            postings,
            embedder,
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The `k` best tools for `query`, best first.
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit> {
        if k == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        if let Some(embedder) = &self.embedder {
            let q = embedder.embed(query);
            let semantic: Vec<(u32, f64)> = self
                .docs
                .iter()
                .enumerate()
                .filter_map(|(i, d)| {
                    let similarity = f64::from(cosine(&q, d.vector.as_deref()?));
                    (similarity > 0.0).then_some((i as u32, similarity))
                })
                .collect();
            if !semantic.is_empty() {
                return self.ranked(semantic, k, SearchTier::Semantic);
            }
        }
        let mut terms = words(query);
        terms.sort_unstable();
        terms.dedup();
        let n = self.docs.len() as f64;
        let lists: Vec<&Vec<(u32, u32)>> =
            terms.iter().filter_map(|t| self.postings.get(t)).collect();
        // Words in more than half of the tools ("the", "a", ...) say almost nothing
        // and cost the most; they count only when nothing else matched.
        let rare: Vec<&Vec<(u32, u32)>> = lists
            .iter()
            .copied()
            .filter(|l| l.len() * 2 <= self.docs.len())
            .collect();
        let lists = if rare.is_empty() { lists } else { rare };
        let mut dense = vec![0.0f64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for list in lists {
            let idf = ((n - list.len() as f64 + 0.5) / (list.len() as f64 + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let norm = self.docs[doc as usize].norm;
                let score = idf * tf * (K1 + 1.0) / (tf + norm);
                let slot = &mut dense[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += score;
            }
        }
        let mut hits: Vec<(u32, f64)> = touched
            .into_iter()
            .map(|d| (d, dense[d as usize]))
            .collect();
        let mut tier = SearchTier::Bm25;
        if hits.is_empty() {
            hits = self.by_name(query);
            tier = SearchTier::Name;
        }
        self.ranked(hits, k, tier)
    }

    /// The `k` best of `hits`, best first (ties by key). Only the best `k` are sorted:
    /// the rest are set aside in linear time.
    fn ranked(&self, mut hits: Vec<(u32, f64)>, k: usize, tier: SearchTier) -> Vec<SearchHit> {
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.total_cmp(&a.1).then_with(|| {
                self.docs[a.0 as usize]
                    .key
                    .cmp(&self.docs[b.0 as usize].key)
            })
        };
        if k < hits.len() {
            hits.select_nth_unstable_by(k, order);
            hits.truncate(k);
        }
        hits.sort_by(order);
        hits.into_iter()
            .map(|(doc, score)| SearchHit {
                key: self.docs[doc as usize].key.clone(),
                score,
                tier,
            })
            .collect()
    }

    /// The name-match tier: names containing the query, then the closest names.
    fn by_name(&self, query: &str) -> Vec<(u32, f64)> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        let contained: Vec<(u32, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.name.contains(&q) || d.key.to_lowercase().contains(&q))
            .map(|(i, _)| (i as u32, 1.0))
            .collect();
        if !contained.is_empty() {
            return contained;
        }
        self.docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let distance = strsim::damerau_levenshtein(&q, &d.name);
                (distance <= (q.len() / 3).max(2))
                    .then(|| (i as u32, 1.0 / (1.0 + distance as f64)))
            })
            .collect()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tackle_core::registry::DynamicTool;
    use tackle_core::spec::{SideEffects, ToolSpec};

    fn registry(tools: &[(&str, &str, &str)]) -> Registry {
        let mut registry = Registry::default();
        for (ns, name, description) in tools {
            let spec = ToolSpec::new(*ns, *name, "1", SideEffects::None, *description);
            registry
                .register(DynamicTool::new(
                    spec,
                    |_c, i| async move { Ok::<_, String>(i) },
                ))
                .unwrap();
        }
        registry
    }

    #[test]
    fn words_split_case_and_punctuation() {
        assert_eq!(
            words("getWeatherForecast v2.1_beta"),
            ["get", "weather", "forecast", "v2", "1", "beta"]
        );
    }

    #[test]
    fn bm25_ranks_the_matching_tool_first_then_names_rescue_typos() {
        let registry = registry(&[
            (
                "weather",
                "forecast",
                "Weather forecast for a city, by day.",
            ),
            ("mail", "send", "Send an email to a person."),
            ("files", "read_file", "Read a file from disk."),
            ("math", "add", "Add two numbers."),
        ]);
        let index = ToolIndex::build(&registry);
        let hits = index.search("what will the weather be in Oslo", 2);
        assert_eq!(hits[0].key, "weather.forecast@1");
        assert_eq!(index.search("email someone", 1)[0].key, "mail.send@1");
        // No word matches: the name tier finds the typo.
        assert_eq!(index.search("forcast", 3)[0].key, "weather.forecast@1");
        assert!(index.search("zzzz qqqq", 3).is_empty());
    }
}
