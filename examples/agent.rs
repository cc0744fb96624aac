//! The main job: a ReAct agent answering a question with a few tools, every tool call
//! through the door and every model call through the replay layer.
//!
//! ```sh
//! cargo run --example agent
//! ```
//!
//! With no configuration it runs **offline**: it replays the committed cassette
//! `examples/cassettes/agent.scripted.json`, a run of a *scripted* model (the
//! `ScriptedModel` turns in [`scripted_turns`], not a live LLM), and prints the
//! trajectory. No model is called; the tools run for real and their results must match.
//!
//! Pointed at an OpenAI-compatible endpoint it runs **live**:
//!
//! ```sh
//! TACKLE_OPENAI_BASE_URL=https://api.openai.com/v1 TACKLE_OPENAI_MODEL=gpt-4o-mini \
//! TACKLE_OPENAI_API_KEY=sk-... cargo run --example agent --features openai-tls -- \
//!     --record /tmp/run.json "How far is Lisbon from Oslo, in miles?"
//! ```
//!
//! (`http://` endpoints, such as a local llama.cpp or vLLM server, need no extra
//! feature.) `--record <file>` writes the run's cassette, which `--replay <file>` plays
//! back offline later. `--script` re-records the committed scripted cassette.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle::agent::model::{
    ChatModel, ChatRequest, ChatResponse, ModelError, ModelFuture, ScriptedModel, ToolCallRequest,
};
use tackle::agent::openai::OpenAiModel;
use tackle::agent::react::{AgentError, ReactState};
use tackle::replay::{load, InteractionKind, Mode};
use tackle::{replay::CassetteConfig, tool, Agent, Cassette, Run, Runtime};

/// A place on Earth.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
struct Point {
    /// Latitude in degrees, north positive.
    lat: f64,
    /// Longitude in degrees, east positive.
    lon: f64,
}

/// What the atlas knows about a city.
#[derive(Debug, Serialize, JsonSchema)]
struct City {
    name: &'static str,
    country: &'static str,
    location: Point,
    population: u64,
}

const ATLAS: &[(&str, &str, f64, f64, u64)] = &[
    ("Oslo", "Norway", 59.9139, 10.7522, 709_037),
    ("Bergen", "Norway", 60.3913, 5.3221, 291_189),
    ("Paris", "France", 48.8566, 2.3522, 2_102_650),
    ("Lisbon", "Portugal", 38.7223, -9.1393, 567_131),
    ("Berlin", "Germany", 52.5200, 13.4050, 3_878_100),
    ("Rome", "Italy", 41.9028, 12.4964, 2_746_984),
    ("Madrid", "Spain", 40.4168, -3.7038, 3_416_771),
    ("Reykjavik", "Iceland", 64.1466, -21.9426, 139_875),
];

/// Look a city up in the atlas: its country, location and population.
#[tool(namespace = "atlas", version = "1", side_effects = none, tags = ["geo"])]
fn lookup(
    /// the city's name in English, such as "Oslo"
    city: String,
) -> Result<City, String> {
    ATLAS
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(city.trim()))
        .map(|&(name, country, lat, lon, population)| City {
            name,
            country,
            location: Point { lat, lon },
            population,
        })
        .ok_or_else(|| {
            let known: Vec<&str> = ATLAS.iter().map(|c| c.0).collect();
            format!(
                "`{city}` is not in the atlas; it knows {}",
                known.join(", ")
            )
        })
}

/// Great-circle distance between two points, in kilometres (rounded to 0.1 km).
#[tool(namespace = "geo", version = "1", side_effects = none, tags = ["geo"])]
fn distance_km(
    /// where from
    from: Point,
    /// where to
    to: Point,
) -> f64 {
    const EARTH_RADIUS_KM: f64 = 6371.0;
    let (p1, p2) = (from.lat.to_radians(), to.lat.to_radians());
    let dp = p2 - p1;
    let dl = (to.lon - from.lon).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    let km = 2.0 * EARTH_RADIUS_KM * a.sqrt().asin();
    (km * 10.0).round() / 10.0
}

/// A unit of length.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Length {
    Km,
    Mi,
    Nmi,
}

/// Convert a length between kilometres, miles and nautical miles (rounded to 0.1).
#[tool(namespace = "units", version = "1", side_effects = none, tags = ["units"])]
fn convert_length(
    /// the length
    value: f64,
    /// its unit
    from: Length,
    /// the unit wanted
    to: Length,
) -> f64 {
    let metres = |unit: Length| match unit {
        Length::Km => 1000.0,
        Length::Mi => 1609.344,
        Length::Nmi => 1852.0,
    };
    (value * metres(from) / metres(to) * 10.0).round() / 10.0
}

const TOOLS: &[&str] = &[lookup::KEY, distance_km::KEY, convert_length::KEY];
pub(crate) const DEFAULT_TASK: &str = "How far is Oslo from Lisbon as the crow flies, in miles?";

pub(crate) fn committed_cassette() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/cassettes/agent.scripted.json")
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The scripted model's turns for the default task. The numbers in later turns come
/// from the same functions the tools run, so the script agrees with the tools.
fn scripted_turns() -> Vec<ChatResponse> {
    let point = |city: &str| {
        let c = ATLAS.iter().find(|c| c.0 == city).expect("in the atlas");
        Point { lat: c.2, lon: c.3 }
    };
    let (oslo, lisbon) = (point("Oslo"), point("Lisbon"));
    let km = distance_km(oslo, lisbon);
    let miles = convert_length(km, Length::Km, Length::Mi);
    vec![
        ChatResponse::calls(
            "I need both cities' coordinates; I'll look them up together.",
            vec![
                call("call_1", "atlas_lookup", json!({"city": "Oslo"})),
                call("call_2", "atlas_lookup", json!({"city": "Lisbon"})),
            ],
        ),
        ChatResponse::calls(
            "Now the great-circle distance between the two points.",
            vec![call(
                "call_3",
                "geo_distance_km",
                json!({"from": oslo, "to": lisbon}),
            )],
        ),
        ChatResponse::calls(
            format!("That is {km} km; converting to miles."),
            vec![call(
                "call_4",
                "units_convert_length",
                json!({"value": km, "from": "km", "to": "mi"}),
            )],
        ),
        ChatResponse::text(format!(
            "Oslo is about {miles} miles ({km} km) from Lisbon as the crow flies."
        )),
    ]
}

/// A model that must never be called: replays answer from the cassette instead.
struct NotCalled {
    provider: String,
    model: String,
}

impl ChatModel for NotCalled {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, _: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(async {
            Err(ModelError::Failed {
                message: "offline replay: the model is not called".into(),
            })
        })
    }
}

/// The recorded model's identity, from the first completion in a cassette.
fn recorded_model(path: &Path) -> Result<NotCalled, String> {
    let file = load(path).map_err(|e| e.to_string())?;
    let key = file
        .interactions
        .iter()
        .find(|i| i.kind == InteractionKind::Operation)
        .map(|i| i.key.clone())
        .ok_or_else(|| format!("{} records no model completion", path.display()))?;
    let rest = key.strip_prefix("llm.").unwrap_or(&key);
    let (provider, model) = rest
        .split_once(".complete@")
        .ok_or_else(|| format!("`{key}` is not a model completion key"))?;
    Ok(NotCalled {
        provider: provider.to_owned(),
        model: model.to_owned(),
    })
}

/// The task of a recorded run: the user's message of its first model completion.
pub(crate) fn recorded_task(path: &Path) -> Result<String, String> {
    let file = load(path).map_err(|e| e.to_string())?;
    file.interactions
        .iter()
        .find(|i| i.kind == InteractionKind::Operation)
        .and_then(|i| i.input["messages"].as_array())
        .and_then(|messages| {
            messages
                .iter()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
        })
        .map(str::to_owned)
        .ok_or_else(|| format!("{} records no task", path.display()))
}

/// What a run does.
pub(crate) enum Plan {
    /// Replay a recorded run offline.
    Replay(PathBuf),
    /// Run the scripted model and record the run to this file.
    Script(PathBuf),
    /// Run against the OpenAI-compatible endpoint of the environment, recording when asked.
    Live { record: Option<PathBuf> },
}

/// A run to make.
pub(crate) struct Args {
    pub(crate) plan: Plan,
    pub(crate) task: String,
}

fn parse_args() -> Result<Args, String> {
    let mut record = None;
    let mut replay = None;
    let mut script = false;
    let mut task = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--record" => record = Some(PathBuf::from(args.next().ok_or("--record needs a file")?)),
            "--replay" => replay = Some(PathBuf::from(args.next().ok_or("--replay needs a file")?)),
            "--script" => script = true,
            "-h" | "--help" => return Err(HELP.to_owned()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}\n\n{HELP}")),
            _ => task.push(arg),
        }
    }
    let live = std::env::var_os("TACKLE_OPENAI_BASE_URL").is_some();
    let plan =
        match (replay, script, live) {
            (Some(path), false, _) => Plan::Replay(path),
            (None, true, _) => Plan::Script(committed_cassette()),
            (None, false, true) => Plan::Live { record },
            (None, false, false) if record.is_some() => return Err(
                "--record needs a live model: set TACKLE_OPENAI_BASE_URL and TACKLE_OPENAI_MODEL"
                    .into(),
            ),
            (None, false, false) => Plan::Replay(committed_cassette()),
            (Some(_), true, _) => return Err("--replay and --script exclude each other".into()),
        };
    let task = match (&plan, task.is_empty()) {
        (_, false) => task.join(" "),
        // A replay answers the task it recorded.
        (Plan::Replay(path), true) => recorded_task(path)?,
        (_, true) => DEFAULT_TASK.to_owned(),
    };
    if matches!(plan, Plan::Script(_)) && task != DEFAULT_TASK {
        return Err("--script plays the scripted turns for the default task only".into());
    }
    Ok(Args { plan, task })
}

const HELP: &str =
    "usage: cargo run --example agent -- [--replay FILE | --script | --record FILE] [TASK]

  (no flags)       replay the committed scripted run, offline
  --replay FILE    replay a recorded run, offline (its recorded task, unless TASK)
  --script         run the scripted model and rewrite the committed cassette
  --record FILE    with TACKLE_OPENAI_BASE_URL set: run live and record to FILE

live: TACKLE_OPENAI_BASE_URL, TACKLE_OPENAI_MODEL, TACKLE_OPENAI_API_KEY (or OPENAI_API_KEY)";

fn print_state(state: &ReactState) {
    let mut last_step = None;
    for entry in &state.trajectory {
        // A turn's calls share the step they were made in; the answer has none.
        let step = entry.tool_call.as_ref().map(|call| call.step);
        if step.is_none() || step != last_step {
            println!("\nstep {}", step.map_or(state.step_index, |s| s + 1));
            last_step = step;
        }
        if !entry.thought.is_empty() {
            let label = if entry.tool_call.is_some() {
                "think "
            } else {
                "answer"
            };
            println!("  {label}   {}", entry.thought);
        }
        if let Some(call) = &entry.tool_call {
            let id = call.call_id.as_deref().unwrap_or("");
            println!("  act      {} {}   [{id}]", call.name, call.arguments);
            let mark = if call.error.is_none() { "ok" } else { "FAILED" };
            let observation = entry.observation.as_deref().unwrap_or("");
            println!("  observe  [{id}] {mark}: {observation}");
        }
    }
    println!(
        "\n{} step(s), {} tool call(s), error budget left {}",
        state.step_index,
        state.tool_calls.len(),
        state.error_budget
    );
    match (&state.final_answer, &state.stop_reason) {
        (Some(answer), _) => println!("\nAnswer: {answer}"),
        (None, Some(why)) => println!("\nNo answer: {why}"),
        (None, None) => println!("\nNo answer."),
    }
}

/// Runs the agent as `args` says, printing what it does; returns the final state.
pub(crate) async fn run(args: Args) -> Result<ReactState, String> {
    let (model, cassette): (Arc<dyn ChatModel>, Option<Cassette>) = match &args.plan {
        Plan::Replay(path) => {
            let model = recorded_model(path)?;
            let label = if *path == committed_cassette() {
                " (a SCRIPTED run: ScriptedModel turns, not a live model)"
            } else {
                ""
            };
            println!(
                "Offline: replaying {}{label}\nmodel: {}.{} (not called)",
                path.display(),
                model.provider,
                model.model
            );
            let cassette = Cassette::open(
                path,
                CassetteConfig::new()
                    .with_mode(Mode::Replay)
                    .with_env_overrides(false),
            )
            .map_err(|e| e.to_string())?;
            (Arc::new(model), Some(cassette))
        }
        Plan::Script(path) => {
            println!("Recording the scripted run to {}", path.display());
            let cassette = Cassette::open(
                path,
                CassetteConfig::new()
                    .with_mode(Mode::Rewrite)
                    .with_env_overrides(false),
            )
            .map_err(|e| e.to_string())?;
            (
                Arc::new(ScriptedModel::new(scripted_turns())),
                Some(cassette),
            )
        }
        Plan::Live { record } => {
            let model = OpenAiModel::from_env().map_err(|e| e.to_string())?;
            println!("Live: {} ({})", model.model(), model.url());
            let cassette = match record {
                Some(path) => {
                    println!("recording to {}", path.display());
                    Some(
                        Cassette::open(
                            path,
                            CassetteConfig::new()
                                .with_mode(Mode::Rewrite)
                                .with_env_overrides(false),
                        )
                        .map_err(|e| e.to_string())?,
                    )
                }
                None => None,
            };
            (Arc::new(model), cassette)
        }
    };
    println!("task: {}", args.task);

    let runtime = Arc::new(Runtime::from_inventory().map_err(|e| e.to_string())?);
    // The run owns the recording: every model and tool call of it goes through the
    // cassette, when there is one.
    let run = match &cassette {
        Some(cassette) => Run::new(&runtime).with_cassette(cassette.clone()),
        None => Run::new(&runtime),
    };
    let agent = Agent::with_model(model).tools(TOOLS).instructions(
        "You answer questions about places with the tools you are given. \
         Look places up rather than guessing, and answer in one sentence.",
    );
    // The program chose the model: its calls need no grant. The example's tools
    // require none either.
    let state = match agent.run(&run, &args.task).await {
        Ok(answer) => answer.state,
        // A run that stops without an answer (its step limit, say) still has a story.
        Err(AgentError::NoAnswer { state }) => *state,
        Err(e) => {
            // Nothing is lost: a failed run's recording is written up to the failure.
            let mut reproduced = false;
            if let Some(cassette) = &cassette {
                if let Some(failure) = cassette.recorded_failure() {
                    println!("the recorded run failed the same way: {failure}");
                    reproduced = true;
                } else if cassette.mode().writes() {
                    cassette
                        .finish_failed(&e.to_string())
                        .map_err(|e| e.to_string())?;
                    println!("wrote {} (a failed run)", cassette.path().display());
                }
            }
            return Err(match &args.plan {
                Plan::Replay(path) if !reproduced => format!(
                    "{e}\n(an offline replay only answers the task it recorded: \"{}\")",
                    recorded_task(path).unwrap_or_default()
                ),
                _ => e.to_string(),
            });
        }
    };
    print_state(&state);
    if let Some(cassette) = cassette {
        let report = cassette.finish().map_err(|e| e.to_string())?;
        for warning in &report.warnings {
            println!("cassette warning: {warning}");
        }
        if cassette.mode().writes() {
            println!("\nwrote {}", cassette.path().display());
        }
    }
    Ok(state)
}

#[tokio::main]
async fn main() {
    let outcome = match parse_args() {
        Ok(args) => run(args).await.map(|_| ()),
        Err(message) => Err(message),
    };
    if let Err(message) = outcome {
        eprintln!("{message}");
        std::process::exit(2);
    }
}
