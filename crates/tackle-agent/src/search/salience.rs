//! Salience: which remembered episodes are worth keeping (seed 004, Stargraph's
//! `stargraph.skills.salience`).
//!
//! An agent that keeps episodes (past observations, notes, results) consolidates only
//! those worth it. A [`SalienceScorer`] gives an [`Episode`] a score in `[0, 1]` for a
//! [`SalienceContext`] (when the episode was last accessed, how often, how many rules
//! it matched, the weights), and [`filter_salient`] keeps those at or above a
//! threshold, best first, so noise is never promoted.
//!
//! [`RuleBasedScorer`] is the seed's v1 scorer, the structure of Park et al. (2023):
//!
//! ```text
//! score = ( w_recency    * exp(-Δt / τ)              Δt: seconds since last_access_ts
//!         + w_relevance  * cos(query_embedding, m)   m: the episode's embedding
//!         + w_importance * imp(m) )                  imp: the episode's importance
//!       * tanh(access_count / 10)                    frequency
//!       * tanh(rule_match_count / 5)                 rule affinity
//! clamped to [0, 1]
//! ```
//!
//! with the seed's defaults: weights `{"recency": 1.0, "relevance": 0.0,
//! "importance": 0.0}` and `τ = decay_tau_seconds = 86400`. The two tanh factors
//! multiply: an episode never accessed, or matching no rule, scores 0. A missing
//! embedding (either side), vectors of different lengths or a zero vector give a
//! relevance of 0; importance is clamped to `[0, 1]`; an access in the future counts
//! as now; anything that is not a finite number scores 0.
//!
//! The scorer is async, as the seed's protocol is, so that later scorers (embedding
//! similarity, a learned model) can await their work behind the same trait.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

/// The timestamp type of [`SalienceContext::last_access_ts`] (RFC 3339 on the wire).
pub use chrono::{DateTime, Utc};

/// Something an agent remembers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// A stable id (ties in score are ordered by it).
    pub id: String,
    /// What happened, as text.
    #[serde(default)]
    pub content: String,
    /// The episode's embedding, compared with the context's query embedding.
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
    /// How much it matters on its own, in `[0, 1]` (`imp(m)`).
    #[serde(default)]
    pub importance: f64,
}

impl Episode {
    /// An episode with this id and content, no embedding, importance 0.
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Episode {
        Episode {
            id: id.into(),
            content: content.into(),
            embedding: None,
            importance: 0.0,
        }
    }
}

/// The weights `{"recency": 1.0, "relevance": 0.0, "importance": 0.0}` of the seed's
/// v1 scorer.
pub fn default_weights() -> BTreeMap<String, f64> {
    BTreeMap::from([
        ("recency".to_owned(), 1.0),
        ("relevance".to_owned(), 0.0),
        ("importance".to_owned(), 0.0),
    ])
}

fn default_tau() -> f64 {
    86_400.0
}

/// What an episode is scored against: its use so far, and the scorer's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SalienceContext {
    /// The query's embedding, for relevance (default none: relevance 0).
    #[serde(default)]
    pub query_embedding: Option<Vec<f64>>,
    /// When the episode was last accessed: recency decays from here.
    pub last_access_ts: DateTime<Utc>,
    /// How often it was accessed (the frequency factor).
    pub access_count: u64,
    /// How many rules it matched (the rule-affinity factor).
    pub rule_match_count: u64,
    /// The weights of recency, relevance and importance; a missing weight is 0.
    #[serde(default = "default_weights")]
    pub weights: BTreeMap<String, f64>,
    /// The recency decay constant τ, in seconds (default 86400).
    #[serde(default = "default_tau")]
    pub decay_tau_seconds: f64,
}

impl SalienceContext {
    /// A context with these counts and the seed's defaults for the rest.
    pub fn new(
        last_access_ts: DateTime<Utc>,
        access_count: u64,
        rule_match_count: u64,
    ) -> SalienceContext {
        SalienceContext {
            query_embedding: None,
            last_access_ts,
            access_count,
            rule_match_count,
            weights: default_weights(),
            decay_tau_seconds: default_tau(),
        }
    }

    /// The weight named `name` (`recency`, `relevance` or `importance`), 0 if absent.
    pub fn weight(&self, name: &str) -> f64 {
        self.weights.get(name).copied().unwrap_or(0.0)
    }
}

/// The future a [`SalienceScorer`] returns.
pub type ScoreFuture<'a> = Pin<Box<dyn Future<Output = f64> + Send + 'a>>;

/// Scores episodes, in `[0, 1]`. See the [module docs](self).
pub trait SalienceScorer: Send + Sync {
    /// The salience of `memory` in `context`.
    fn score<'a>(&'a self, memory: &'a Episode, context: &'a SalienceContext) -> ScoreFuture<'a>;
}

/// The seed's v1 scorer. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RuleBasedScorer {
    /// The time recency is measured at; `None`: the time of each score.
    now: Option<DateTime<Utc>>,
}

impl RuleBasedScorer {
    /// A scorer that measures recency at the time it scores.
    pub fn new() -> RuleBasedScorer {
        RuleBasedScorer::default()
    }

    /// A scorer that measures recency at `now` (for tests and replays).
    pub fn at(now: DateTime<Utc>) -> RuleBasedScorer {
        RuleBasedScorer { now: Some(now) }
    }

    /// `exp(-Δt / τ)`, Δt in seconds since `last_access_ts` (0 when it is in the
    /// future); with τ not above 0, 1 at Δt = 0 and 0 after.
    pub fn recency(&self, context: &SalienceContext) -> f64 {
        let now = self.now.unwrap_or_else(Utc::now);
        let elapsed = (now - context.last_access_ts).num_milliseconds().max(0) as f64 / 1000.0;
        let tau = context.decay_tau_seconds;
        if tau.is_nan() || tau <= 0.0 {
            return if elapsed == 0.0 { 1.0 } else { 0.0 };
        }
        (-elapsed / tau).exp()
    }

    /// The cosine of the query embedding and the episode's; 0 when either is
    /// missing, they differ in length, or one is a zero vector.
    pub fn relevance(&self, memory: &Episode, context: &SalienceContext) -> f64 {
        let (Some(q), Some(m)) = (&context.query_embedding, &memory.embedding) else {
            return 0.0;
        };
        if q.len() != m.len() || q.is_empty() {
            return 0.0;
        }
        let dot: f64 = q.iter().zip(m).map(|(a, b)| a * b).sum();
        let norms = q.iter().map(|a| a * a).sum::<f64>().sqrt()
            * m.iter().map(|b| b * b).sum::<f64>().sqrt();
        if norms == 0.0 {
            return 0.0;
        }
        dot / norms
    }

    /// The score, computed now. See the [module docs](self).
    pub fn score_now(&self, memory: &Episode, context: &SalienceContext) -> f64 {
        let importance = if memory.importance.is_finite() {
            memory.importance.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let sum = context.weight("recency") * self.recency(context)
            + context.weight("relevance") * self.relevance(memory, context)
            + context.weight("importance") * importance;
        let frequency = (context.access_count as f64 / 10.0).tanh();
        let affinity = (context.rule_match_count as f64 / 5.0).tanh();
        let score = sum * frequency * affinity;
        if score.is_finite() {
            score.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

impl SalienceScorer for RuleBasedScorer {
    fn score<'a>(&'a self, memory: &'a Episode, context: &'a SalienceContext) -> ScoreFuture<'a> {
        Box::pin(std::future::ready(self.score_now(memory, context)))
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

/// The episodes scoring at least `threshold` (each in its own context), best first,
/// ties by id.
pub async fn filter_salient<'a>(
    scorer: &dyn SalienceScorer,
    candidates: &'a [(Episode, SalienceContext)],
    threshold: f64,
) -> Vec<Scored<'a>> {
    let mut kept = Vec::new();
    for (episode, context) in candidates {
        let score = scorer.score(episode, context).await;
        if score >= threshold {
            kept.push(Scored { episode, score });
        }
    }
    kept.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.episode.id.cmp(&b.episode.id))
    });
    kept
}
