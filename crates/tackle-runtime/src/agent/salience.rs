//! Salience: which remembered episodes are worth putting in front of a model.
//!
//! An agent that keeps episodes (past observations, notes, results) cannot show the
//! model all of them. A [`SalienceScorer`] gives each [`Episode`] a score in `[0, 1]`
//! for a [`SalienceContext`] (the time now and what the agent is working on), and
//! [`filter_salient`] keeps those at or above a threshold, best first.
//!
//! [`RuleBasedScorer`] scores with no model at all:
//!
//! ```text
//! recency   = 0.5 ^ (seconds since last access / half_life)
//! relevance = share of the query's distinct words found in the episode's words
//! base      = w_recency * recency + w_relevance * relevance + w_importance * importance
//! boost     = (1 + access_boost * tanh(access_count / 10))
//!           * (1 + rule_boost   * tanh(rule_match_count / 5))
//! salience  = clamp(base * boost, 0, 1)
//! ```
//!
//! `rule_match_count` is how many of the scorer's [`SalienceRule`]s match the episode
//! (a rule matches when any of its keywords is one of the episode's words or tags).
//! The tanh terms saturate: the 10th access or the 5th matching rule adds less than the
//! first, and no count can push the boost past `1 + weight`. Importance is clamped to
//! `[0, 1]`; anything that is not a finite number scores 0. Defaults: a half-life of one
//! day, weights 0.3 / 0.4 / 0.3 (summing to 1, so `base` is in `[0, 1]`), and both
//! boosts 0.5.

use serde::{Deserialize, Serialize};

/// Something an agent remembers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// A stable id (ties in score are ordered by it).
    pub id: String,
    /// What happened, as text.
    pub content: String,
    /// Labels, matched by rules like words of the content.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How much it matters on its own, in `[0, 1]`.
    pub importance: f64,
    /// When it was last used, in seconds since the Unix epoch.
    pub last_accessed: f64,
    /// How often it has been used.
    pub access_count: u32,
}

/// What an episode is scored against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SalienceContext {
    /// The time now, in seconds since the Unix epoch.
    pub now: f64,
    /// What the agent is working on (the task, or the current question).
    pub query: String,
}

impl SalienceContext {
    /// A context at `now` (seconds since the epoch) for `query`.
    pub fn new(now: f64, query: impl Into<String>) -> SalienceContext {
        SalienceContext {
            now,
            query: query.into(),
        }
    }
}

/// Scores episodes. See the [module docs](self).
pub trait SalienceScorer: Send + Sync {
    /// The episode's salience in `[0, 1]`.
    fn score(&self, episode: &Episode, context: &SalienceContext) -> f64;
}

/// A named set of keywords; it matches an episode containing any of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SalienceRule {
    /// What the rule is about.
    pub name: String,
    /// Lowercase words; one match is enough.
    pub keywords: Vec<String>,
}

impl SalienceRule {
    /// A rule named `name` matching any of `keywords` (case-insensitive).
    pub fn new(name: impl Into<String>, keywords: &[&str]) -> SalienceRule {
        SalienceRule {
            name: name.into(),
            keywords: keywords.iter().map(|k| k.to_lowercase()).collect(),
        }
    }
}

/// The weights of [`RuleBasedScorer`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SalienceWeights {
    /// Weight of recency in the base.
    pub recency: f64,
    /// Weight of relevance in the base.
    pub relevance: f64,
    /// Weight of importance in the base.
    pub importance: f64,
    /// How much use can raise the score: the factor `1 + access_boost * tanh(n / 10)`.
    pub access_boost: f64,
    /// How much matching rules can raise it: `1 + rule_boost * tanh(m / 5)`.
    pub rule_boost: f64,
}

impl Default for SalienceWeights {
    fn default() -> SalienceWeights {
        SalienceWeights {
            recency: 0.3,
            relevance: 0.4,
            importance: 0.3,
            access_boost: 0.5,
            rule_boost: 0.5,
        }
    }
}

/// The scorer of the [module docs](self): recency, relevance and importance, boosted
/// by use and by matching rules.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleBasedScorer {
    /// Seconds after which recency halves.
    pub half_life: f64,
    /// The weights.
    pub weights: SalienceWeights,
    /// The rules.
    pub rules: Vec<SalienceRule>,
}

impl Default for RuleBasedScorer {
    fn default() -> RuleBasedScorer {
        RuleBasedScorer {
            half_life: 86_400.0,
            weights: SalienceWeights::default(),
            rules: Vec::new(),
        }
    }
}

/// The lowercase words of a text, as tool search splits them; shorter than 2 dropped.
fn words(text: &str) -> Vec<String> {
    let mut words = crate::agent::search::words(text);
    words.retain(|w| w.chars().count() >= 2);
    words
}

impl RuleBasedScorer {
    /// The default scorer with `rules`.
    pub fn with_rules(rules: Vec<SalienceRule>) -> RuleBasedScorer {
        RuleBasedScorer {
            rules,
            ..RuleBasedScorer::default()
        }
    }

    /// `0.5 ^ (elapsed / half_life)`; an access in the future counts as now.
    pub fn recency(&self, episode: &Episode, context: &SalienceContext) -> f64 {
        let elapsed = (context.now - episode.last_accessed).max(0.0);
        if self.half_life <= 0.0 {
            return if elapsed == 0.0 { 1.0 } else { 0.0 };
        }
        0.5_f64.powf(elapsed / self.half_life)
    }

    /// The share of the query's distinct words that are among the episode's words
    /// (0 for an empty query).
    pub fn relevance(&self, episode: &Episode, context: &SalienceContext) -> f64 {
        let mut query = words(&context.query);
        query.sort_unstable();
        query.dedup();
        if query.is_empty() {
            return 0.0;
        }
        let content = words(&episode.content);
        let found = query.iter().filter(|q| content.contains(q)).count();
        found as f64 / query.len() as f64
    }

    /// How many rules match the episode's words or tags.
    pub fn rule_matches(&self, episode: &Episode) -> usize {
        let mut vocabulary = words(&episode.content);
        vocabulary.extend(episode.tags.iter().map(|t| t.to_lowercase()));
        self.rules
            .iter()
            .filter(|rule| rule.keywords.iter().any(|k| vocabulary.contains(k)))
            .count()
    }
}

impl SalienceScorer for RuleBasedScorer {
    fn score(&self, episode: &Episode, context: &SalienceContext) -> f64 {
        let w = &self.weights;
        let importance = if episode.importance.is_finite() {
            episode.importance.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let base = w.recency * self.recency(episode, context)
            + w.relevance * self.relevance(episode, context)
            + w.importance * importance;
        let boost = (1.0 + w.access_boost * (f64::from(episode.access_count) / 10.0).tanh())
            * (1.0 + w.rule_boost * (self.rule_matches(episode) as f64 / 5.0).tanh());
        let score = base * boost;
        if score.is_finite() {
            score.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// An episode with its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored<'a> {
    /// The episode.
    pub episode: &'a Episode,
    /// Its salience.
    pub score: f64,
}

/// The episodes scoring at least `threshold`, best first (ties by id).
pub fn filter_salient<'a>(
    scorer: &dyn SalienceScorer,
    episodes: &'a [Episode],
    context: &SalienceContext,
    threshold: f64,
) -> Vec<Scored<'a>> {
    let mut kept: Vec<Scored<'a>> = episodes
        .iter()
        .map(|episode| Scored {
            episode,
            score: scorer.score(episode, context),
        })
        .filter(|s| s.score >= threshold)
        .collect();
    kept.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.episode.id.cmp(&b.episode.id))
    });
    kept
}
