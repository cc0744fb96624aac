//! Salience: `RuleBasedScorer` against values computed by hand from the formula in
//! `tackle::agent::salience`, clamping, and the threshold filter.

use tackle::agent::salience::{
    filter_salient, Episode, RuleBasedScorer, SalienceContext, SalienceRule, SalienceScorer,
};

const NOW: f64 = 1_700_000_000.0;
const DAY: f64 = 86_400.0;

fn episode(id: &str, content: &str, importance: f64, age: f64, access_count: u32) -> Episode {
    Episode {
        id: id.into(),
        content: content.into(),
        tags: Vec::new(),
        importance,
        last_accessed: NOW - age,
        access_count,
    }
}

fn scorer() -> RuleBasedScorer {
    RuleBasedScorer::with_rules(vec![
        SalienceRule::new("travel", &["harbour", "ferry"]),
        SalienceRule::new("norway", &["bergen", "oslo"]),
        SalienceRule::new("food", &["fish"]),
    ])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn scores_match_hand_computed_values() {
    let plain = RuleBasedScorer::default();

    // One half-life old (recency 0.5), both query words present (relevance 1),
    // importance 0.2, ten accesses, no rules:
    // base = 0.3*0.5 + 0.4*1 + 0.3*0.2 = 0.61; boost = 1 + 0.5*tanh(1) = 1.3807970779778824
    let a = episode("a", "Weather in Oslo: rain all day.", 0.2, DAY, 10);
    let ctx = SalienceContext::new(NOW, "Oslo weather");
    assert_eq!(plain.recency(&a, &ctx), 0.5);
    assert_eq!(plain.relevance(&a, &ctx), 1.0);
    assert!(close(plain.score(&a, &ctx), 0.842_286_217_566_508_2));

    // Two half-lives (0.25), one of two query words (0.5), importance 0.5, three
    // accesses, two matching rules (travel: harbour, norway: bergen):
    // base = 0.075 + 0.2 + 0.15 = 0.425
    // boost = (1 + 0.5*tanh(0.3)) * (1 + 0.5*tanh(0.4)) = 1.1456469 * 1.1899745
    let b = episode("b", "Bergen harbour is busy", 0.5, 2.0 * DAY, 3);
    let ctx = SalienceContext::new(NOW, "ferry Bergen");
    assert_eq!(scorer().rule_matches(&b), 2);
    assert_eq!(scorer().relevance(&b, &ctx), 0.5);
    assert!(close(scorer().score(&b, &ctx), 0.579_403_251_634_437_7));

    // Ten half-lives, nothing relevant, no importance, never used:
    // 0.3 * 0.5^10 = 0.00029296875
    let d = episode("d", "Lunch was fish", 0.0, 10.0 * DAY, 0);
    assert!(close(plain.score(&d, &ctx), 0.000_292_968_75));
    // The food rule matches, but a boost of nearly nothing is nearly nothing.
    assert_eq!(scorer().rule_matches(&d), 1);
}

#[test]
fn scores_are_clamped_and_bad_numbers_are_tamed() {
    let ctx = SalienceContext::new(NOW, "ferry bergen");
    let s = scorer();
    // base 1 with a boost above 1 is clamped to 1.
    let max = episode("max", "Ferry to Bergen", 1.0, 0.0, 100);
    assert_eq!(s.score(&max, &ctx), 1.0);
    // Importance above 1 counts as 1; a future access counts as now.
    let over = episode("over", "nothing in common", 7.0, -DAY, 0);
    assert!(close(s.score(&over, &ctx), 0.3 + 0.3));
    let nan = episode("nan", "nothing in common", f64::NAN, 0.0, 0);
    assert!(close(s.score(&nan, &ctx), 0.3));
    // Tags count for rules as words do.
    let mut tagged = episode("tagged", "nothing in common", 0.0, 0.0, 0);
    tagged.tags = vec!["Fish".into()];
    assert_eq!(s.rule_matches(&tagged), 1);
    // An empty query is relevant to nothing.
    assert_eq!(s.relevance(&max, &SalienceContext::new(NOW, "  ")), 0.0);
}

#[test]
fn episodes_below_the_threshold_are_filtered_best_first() {
    let episodes = vec![
        episode("d", "Lunch was fish", 0.0, 10.0 * DAY, 0),
        episode("b", "Bergen harbour is busy", 0.5, 2.0 * DAY, 3),
        episode("max", "Ferry to Bergen", 1.0, 0.0, 100),
        episode("also-max", "Ferry to Bergen", 1.0, 0.0, 100),
    ];
    let ctx = SalienceContext::new(NOW, "ferry Bergen");
    let kept = filter_salient(&scorer(), &episodes, &ctx, 0.5);
    let ids: Vec<&str> = kept.iter().map(|s| s.episode.id.as_str()).collect();
    assert_eq!(ids, ["also-max", "max", "b"]);
    assert!(kept.iter().all(|s| s.score >= 0.5));
    assert!(filter_salient(&scorer(), &episodes, &ctx, 1.01).is_empty());
    assert_eq!(filter_salient(&scorer(), &episodes, &ctx, 0.0).len(), 4);
}
