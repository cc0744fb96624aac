//! Salience, as seed 004 states it: `RuleBasedScorer` against values computed by hand
//! from the seed's formula, the context's fields and defaults on the wire, clamping,
//! and `filter_salient`'s threshold.
//!
//! score = (w_recency * exp(-Δt/τ) + w_relevance * cos(q, m) + w_importance * imp(m))
//!         * tanh(access_count / 10) * tanh(rule_match_count / 5), clamped to [0, 1]

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use tackle::agent::salience::{
    default_weights, filter_salient, Episode, RuleBasedScorer, SalienceContext, SalienceScorer,
};

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-23T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[tokio::test]
async fn defaults_are_the_seeds() {
    let ctx = SalienceContext::new(now(), 1, 1);
    assert_eq!(ctx.query_embedding, None);
    assert_eq!(ctx.decay_tau_seconds, 86_400.0);
    assert_eq!(
        ctx.weights,
        default_weights(),
        "recency 1.0, relevance 0.0, importance 0.0"
    );
    assert_eq!(ctx.weight("recency"), 1.0);
    assert_eq!(ctx.weight("relevance"), 0.0);
    assert_eq!(ctx.weight("importance"), 0.0);
}

#[tokio::test]
async fn never_accessed_or_no_rule_scores_zero() {
    let scorer = RuleBasedScorer::at(now());
    let episode = Episode::new("e", "fresh and important");
    // Accessed this instant, but never before: tanh(0) = 0.
    let ctx = SalienceContext::new(now(), 0, 3);
    assert_eq!(scorer.score(&episode, &ctx).await, 0.0);
    let ctx = SalienceContext::new(now(), 3, 0);
    assert_eq!(scorer.score(&episode, &ctx).await, 0.0);
}

#[tokio::test]
async fn one_hour_three_accesses_one_rule() {
    // exp(-3600 / 86400) * tanh(3 / 10) * tanh(1 / 5)
    let scorer = RuleBasedScorer::at(now());
    let ctx = SalienceContext::new(now() - Duration::hours(1), 3, 1);
    let score = scorer.score(&Episode::new("e", ""), &ctx).await;
    assert!(close(score, 0.055_151_398_831_027_01), "{score}");
    assert_eq!(format!("{score:.3}"), "0.055");
}

#[tokio::test]
async fn weighted_relevance_and_importance() {
    // One day old (exp(-1)), cos([1, 0], [1, 1]) = 1/sqrt(2), importance 0.8,
    // weights recency 0.5 / relevance 0.3 / importance 0.2, 10 accesses, 5 rules:
    // (0.5 e^-1 + 0.3 / sqrt(2) + 0.2 * 0.8) * tanh(1) * tanh(1)
    let scorer = RuleBasedScorer::at(now());
    let mut ctx = SalienceContext::new(now() - Duration::days(1), 10, 5);
    ctx.query_embedding = Some(vec![1.0, 0.0]);
    ctx.weights = [("recency", 0.5), ("relevance", 0.3), ("importance", 0.2)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let mut episode = Episode::new("e", "");
    episode.embedding = Some(vec![1.0, 1.0]);
    episode.importance = 0.8;
    assert!(close(
        scorer.relevance(&episode, &ctx),
        std::f64::consts::FRAC_1_SQRT_2
    ));
    assert!(close(scorer.recency(&ctx), (-1.0_f64).exp()));
    let score = scorer.score(&episode, &ctx).await;
    assert!(close(score, 0.322_535_885_769_895), "{score}");
}

#[tokio::test]
async fn scores_are_clamped_and_never_nan() {
    let scorer = RuleBasedScorer::at(now());
    let mut ctx = SalienceContext::new(now(), 100, 100);
    ctx.weights = [("recency", 2.0), ("relevance", 2.0), ("importance", 2.0)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    ctx.query_embedding = Some(vec![3.0, 4.0]);
    let mut episode = Episode::new("e", "");
    episode.embedding = Some(vec![3.0, 4.0]);
    episode.importance = 7.0; // clamped to 1
    assert_eq!(scorer.score(&episode, &ctx).await, 1.0);
    episode.importance = f64::NAN;
    ctx.weights.insert("recency".into(), f64::NAN);
    assert_eq!(scorer.score(&episode, &ctx).await, 0.0);
    // Embeddings of different lengths, or a zero vector: no relevance.
    episode.embedding = Some(vec![1.0]);
    assert_eq!(scorer.relevance(&episode, &ctx), 0.0);
    episode.embedding = Some(vec![0.0, 0.0]);
    assert_eq!(scorer.relevance(&episode, &ctx), 0.0);
    // An access in the future counts as now; τ of 0 decays at once.
    let mut ctx = SalienceContext::new(now() + Duration::hours(1), 1, 1);
    assert_eq!(scorer.recency(&ctx), 1.0);
    ctx.decay_tau_seconds = 0.0;
    ctx.last_access_ts = now() - Duration::seconds(1);
    assert_eq!(scorer.recency(&ctx), 0.0);
}

#[tokio::test]
async fn the_context_on_the_wire() {
    let ctx: SalienceContext = serde_json::from_value(json!({
        "last_access_ts": "2026-11-23T11:00:00Z",
        "access_count": 3,
        "rule_match_count": 1
    }))
    .unwrap();
    assert_eq!(ctx, SalienceContext::new(now() - Duration::hours(1), 3, 1));
    let written = serde_json::to_value(&ctx).unwrap();
    assert_eq!(written["last_access_ts"], "2026-11-23T11:00:00Z");
    assert_eq!(written["decay_tau_seconds"], 86_400.0);
    assert_eq!(
        written["weights"],
        json!({"importance": 0.0, "recency": 1.0, "relevance": 0.0})
    );
    assert!(written["query_embedding"].is_null());
}

#[tokio::test]
async fn filter_keeps_scores_at_or_above_the_threshold_best_first() {
    let scorer = RuleBasedScorer::at(now());
    let at = |hours: i64, accesses: u64| {
        SalienceContext::new(now() - Duration::hours(hours), accesses, 5)
    };
    let candidates = vec![
        (Episode::new("old", ""), at(96, 10)),
        (Episode::new("b", ""), at(0, 10)),
        (Episode::new("a", ""), at(0, 10)),
        (Episode::new("never", ""), at(0, 0)),
    ];
    // Recent and used: tanh(1)^2 = 0.58; four days old: e^-4 tanh(1)^2 = 0.0106.
    let threshold = (1.0_f64).tanh().powi(2);
    let kept = filter_salient(&scorer, &candidates, threshold).await;
    let ids: Vec<&str> = kept.iter().map(|s| s.episode.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"], "ties by id; the threshold itself is kept");
    let kept = filter_salient(&scorer, &candidates, 0.01).await;
    let ids: Vec<&str> = kept.iter().map(|s| s.episode.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "old"]);
    assert!(kept.iter().all(|s| s.score >= 0.01));
}
