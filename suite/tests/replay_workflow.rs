//! The workflow users follow: record once, commit the cassette, replay in `cargo test`.
//!
//! `tests/cassettes/it_agents.replay_workflow.*.json` were recorded with
//! `TACKLE_CASSETTE=once cargo test -p tackle-suite --test it_agents replay_workflow::` and committed; every other
//! run (CI included) replays them, and the "remote" tools never run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::replay::Mode;
use tackle::{tool, Run, Runtime, ToolContext};

static FORECAST_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The forecast for a city (stands in for a remote weather service).
#[tool(namespace = "weather", side_effects = external)]
fn forecast(city: String, days: u8) -> Vec<String> {
    FORECAST_CALLS.fetch_add(1, Ordering::SeqCst);
    (0..days)
        .map(|d| format!("{city} day {d}: sunny"))
        .collect()
}

/// Book a table (stands in for a remote booking service).
#[tool(namespace = "dining", side_effects = write)]
fn book(restaurant: String, guests: u8) -> Result<String, String> {
    FORECAST_CALLS.fetch_add(1, Ordering::SeqCst);
    if guests > 8 {
        return Err(format!("{restaurant} seats at most 8"));
    }
    Ok(format!("booked {restaurant} for {guests}"))
}

#[tokio::test]
async fn plan_an_evening() {
    let cassette = tackle::cassette!().expect("the test's cassette opens");
    let replaying = cassette.mode() == Mode::Replay;
    let run = Run::new(&Arc::new(
        Runtime::from_inventory_in(module_path!()).unwrap(),
    ))
    .with_cassette(cassette);
    let ctx = ToolContext::new();

    let days = run
        .call("weather.forecast", json!({"city": "Oslo", "days": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(days, json!(["Oslo day 0: sunny", "Oslo day 1: sunny"]));
    let too_many = run
        .call(
            "dining.book",
            json!({"restaurant": "Maaemo", "guests": 12}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(
        too_many.to_string(),
        "`dining.book@1` failed: Maaemo seats at most 8"
    );
    let booked = run
        .call(
            "dining.book",
            json!({"restaurant": "Maaemo", "guests": 4}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(booked, json!("booked Maaemo for 4"));

    run.finish().unwrap();
    if replaying {
        assert_eq!(
            FORECAST_CALLS.load(Ordering::SeqCst),
            0,
            "replay never reaches the services"
        );
    }
}
