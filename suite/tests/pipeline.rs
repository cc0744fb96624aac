//! Pipeline documents: a YAML document of tool and broker nodes runs over a state,
//! with templates, a provenance envelope, per-node capability checks, and errors that
//! say where (line and column, or the node) and keep the state.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tackle::pipeline::{
    Broker, BrokerFuture, BrokerHandle, BrokerResponse, Pipeline, PipelineError,
};
use tackle::{tool, Run, Runtime, ToolContext, ToolErrorKind};

/// Look a city up: its country and population.
#[tool(namespace = "atlas", version = "1", side_effects = none)]
fn lookup(city: String) -> Result<Value, String> {
    match city.as_str() {
        "Oslo" => Ok(json!({"country": "Norway", "population": 709037})),
        "Lisbon" => Ok(json!({"country": "Portugal", "population": 567131})),
        other => Err(format!("{other} is not in the atlas")),
    }
}

/// Write a one-line brief.
#[tool(namespace = "text", version = "1", side_effects = none)]
fn brief(line: String, population: u64) -> String {
    format!("{line} ({population} people)")
}

/// Book something (needs `bookings:write`).
#[tool(namespace = "bookings", version = "1", side_effects = write, requires_capability = "bookings:write")]
fn book(what: String) -> String {
    format!("booked {what}")
}

/// A broker that answers every intent and notes what it was sent.
#[derive(Default)]
struct EchoBroker {
    sent: Mutex<Vec<(String, String)>>,
}

impl Broker for EchoBroker {
    fn request<'a>(&'a self, agent_id: &'a str, intent: &'a str) -> BrokerFuture<'a> {
        Box::pin(async move {
            self.sent
                .lock()
                .unwrap()
                .push((agent_id.to_owned(), intent.to_owned()));
            if agent_id == "offline-agent" {
                return Err("agent offline-agent is not connected".to_owned());
            }
            Ok(BrokerResponse::new("msg-42")
                .with_field("accepted", json!(true))
                .with_field("echo", json!(intent)))
        })
    }
}

const DOC: &str = r#"
name: city-brief
description: Look a city up, brief it, and hand the brief to a travel agent.
nodes:
  - id: lookup
    kind: tool
    tool: atlas.lookup@1
    inputs:
      city: "{{state.request.city}}"
    out: city
  - id: brief
    kind: tool
    tool: text.brief
    inputs:
      line: "{{state.request.city}} is in {{state.city.country}}"
      population: "{{state.city.population}}"
    out: brief
  - id: handoff
    kind: broker
    agent_id_field: state.route.agent_id
    intent_field: route.intent
    requires: ["agents:travel"]
    output_field: reply
"#;

/// A run over the inventory's tools.
fn new_run() -> Run {
    Run::new(&Arc::new(
        Runtime::from_inventory_in(module_path!()).unwrap(),
    ))
}

fn start() -> Value {
    json!({
        "request": {"city": "Oslo"},
        "route": {"agent_id": "travel-agent", "intent": "plan a city trip"},
    })
}

fn parse_error(text: &str) -> (usize, usize, String) {
    match Pipeline::from_yaml(text) {
        Err(PipelineError::Parse {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_document_runs_tools_and_the_broker_over_the_state() {
    let pipeline = Pipeline::from_yaml(DOC).unwrap();
    assert_eq!(pipeline.name, "city-brief");
    assert_eq!(pipeline.nodes.len(), 3);
    let broker = Arc::new(EchoBroker::default());
    let ctx = ToolContext::new()
        .with_grant("agents:*")
        .with_grant("tools:broker_request")
        .with_resource(BrokerHandle(broker.clone()));
    let state = pipeline.run(&new_run(), start(), &ctx).await.unwrap();

    // An exact template keeps the value's type (the population is a number).
    assert_eq!(
        state["city"],
        json!({"country": "Norway", "population": 709037})
    );
    assert_eq!(state["brief"], "Oslo is in Norway (709037 people)");
    assert_eq!(
        state["reply"],
        json!({
            "request_id": "msg-42",
            "accepted": true,
            "echo": "plan a city trip",
            "__stargraph_provenance__": {"origin": "tool", "source": "nautilus", "external_id": "msg-42"},
        })
    );
    assert_eq!(
        broker.sent.lock().unwrap().as_slice(),
        [("travel-agent".to_owned(), "plan a city trip".to_owned())]
    );
}

#[test]
fn unknown_fields_and_bad_yaml_are_errors_with_line_and_column() {
    let typo = DOC.replace("    out: brief", "    outt: brief");
    let (line, column, message) = parse_error(&typo);
    assert_eq!((line, column), (17, 5), "{message}");
    assert!(
        !message.contains("at line"),
        "the location is said once: {message}"
    );
    assert!(message.contains("unknown field `outt`"), "{message}");

    let top = "name: x\nnodes: []\nversion: 2\n";
    let (line, column, message) = parse_error(top);
    assert_eq!((line, column), (3, 1), "{message}");
    assert!(message.contains("unknown field `version`"), "{message}");

    let kind = "name: x\nnodes:\n  - id: a\n    kind: agent\n    out: y\n";
    let (line, column, message) = parse_error(kind);
    assert_eq!((line, column), (4, 11), "{message}");
    assert!(message.contains("unknown variant `agent`"), "{message}");

    let (line, _, _) = parse_error("name: x\nnodes:\n  - id: [unclosed\n");
    assert!(line >= 3, "bad YAML points past its start, got line {line}");
}

#[test]
fn nodes_must_fit_their_kind() {
    let cases = [
        ("  - id: a\n    kind: tool\n    out: y\n", "a tool node needs `tool`"),
        (
            "  - id: a\n    kind: broker\n    tool: atlas.lookup\n    out: y\n",
            "belong to tool nodes",
        ),
        (
            "  - id: a\n    kind: tool\n    tool: t\n    agent: state.x\n    out: y\n",
            "belongs to broker nodes",
        ),
        (
            "  - id: a\n    kind: tool\n    tool: t\n    intent_field: x\n    out: y\n",
            "belongs to broker nodes",
        ),
        (
            "  - id: a\n    kind: tool\n    tool: t\n    inputs: {city: \"{{city}}\"}\n    out: y\n",
            "is not a state template",
        ),
        (
            "  - id: a\n    kind: tool\n    tool: t\n    inputs: {city: \"{{state.city\"}\n    out: y\n",
            "never closes",
        ),
        (
            "  - id: a\n    kind: broker\n    intent: \"state.\"\n    out: y\n",
            "is not a state field",
        ),
    ];
    for (node, expected) in cases {
        let doc = format!("name: x\nnodes:\n{node}");
        match Pipeline::from_yaml(&doc) {
            Err(PipelineError::BadNode { node, message }) => {
                assert_eq!(node, "a");
                assert!(message.contains(expected), "{message:?} lacks {expected:?}");
            }
            other => panic!("{doc}: {other:?}"),
        }
    }
    let twice =
        "name: x\nnodes:\n  - {id: a, kind: broker, out: y}\n  - {id: a, kind: broker, out: z}\n";
    assert!(matches!(
        Pipeline::from_yaml(twice),
        Err(PipelineError::DuplicateNode(id)) if id == "a"
    ));
}

#[tokio::test]
async fn missing_tools_state_and_broker_are_clear_errors_that_keep_the_state() {
    let run = new_run();
    let ctx = ToolContext::new()
        .with_grant("agents:*")
        .with_grant("tools:broker_request");

    let unknown = Pipeline::from_yaml(&DOC.replace("text.brief", "text.summary")).unwrap();
    match unknown.run(&run, start(), &ctx).await {
        Err(PipelineError::UnknownTool { node, tool }) => {
            assert_eq!((node.as_str(), tool.as_str()), ("brief", "text.summary"))
        }
        other => panic!("{other:?}"),
    }

    let pipeline = Pipeline::from_yaml(DOC).unwrap();
    let mut no_route = start();
    no_route.as_object_mut().unwrap().remove("route");
    let error = pipeline.run(&run, no_route, &ctx).await.unwrap_err();
    match &error {
        PipelineError::MissingState { node, path, .. } => {
            assert_eq!(
                (node.as_str(), path.as_str()),
                ("handoff", "route.agent_id")
            )
        }
        other => panic!("{other:?}"),
    }
    // Nothing lost: the state holds what the earlier nodes wrote.
    assert_eq!(
        error.state().unwrap()["brief"],
        "Oslo is in Norway (709037 people)"
    );

    match pipeline.run(&run, start(), &ctx).await {
        Err(PipelineError::MissingBroker { node, state }) => {
            assert_eq!(node, "handoff");
            assert!(state.get("city").is_some());
        }
        other => panic!("{other:?}"),
    }

    let broker = ctx
        .clone()
        .with_resource(BrokerHandle::new(EchoBroker::default()));
    let mut offline = start();
    offline["route"]["agent_id"] = json!("offline-agent");
    match pipeline.run(&run, offline, &broker).await {
        Err(PipelineError::Broker { node, message, .. }) => {
            assert_eq!(node, "handoff");
            assert!(message.contains("not connected"));
        }
        other => panic!("{other:?}"),
    }

    let mut lisbonless = start();
    lisbonless["request"]["city"] = json!("Atlantis");
    match pipeline.run(&run, lisbonless, &broker).await {
        Err(PipelineError::Tool { node, error, .. }) => {
            assert_eq!(node, "lookup");
            assert_eq!(error.kind(), ToolErrorKind::Execution);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        pipeline.run(&run, json!([1]), &broker).await,
        Err(PipelineError::StateNotObject(_))
    ));
}

#[tokio::test]
async fn capabilities_are_checked_per_node() {
    let run = new_run();
    let pipeline = Pipeline::from_yaml(DOC).unwrap();
    let broker = BrokerHandle::new(EchoBroker::default());

    // The broker node's own `requires` is missing.
    let ctx = ToolContext::new()
        .with_grant("tools:broker_request")
        .with_resource(broker.clone());
    match pipeline.run(&run, start(), &ctx).await {
        Err(PipelineError::Denied {
            node,
            missing,
            state,
        }) => {
            assert_eq!(node, "handoff");
            assert_eq!(missing, ["agents:travel"]);
            assert!(state.get("brief").is_some(), "the tool nodes before it ran");
        }
        other => panic!("{other:?}"),
    }
    // Every broker node needs tools:broker_request.
    let ctx = ToolContext::new()
        .with_grant("agents:travel")
        .with_resource(broker.clone());
    match pipeline.run(&run, start(), &ctx).await {
        Err(PipelineError::Denied { missing, .. }) => {
            assert_eq!(missing, ["tools:broker_request"])
        }
        other => panic!("{other:?}"),
    }
    // A tool node's tool is behind the door's own capability gate.
    let book = Pipeline::from_yaml(
        "name: b\nnodes:\n  - id: book\n    kind: tool\n    tool: bookings.book\n    inputs: {what: \"{{state.request.city}}\"}\n    out: booking\n",
    )
    .unwrap();
    match book.run(&run, start(), &ToolContext::new()).await {
        Err(PipelineError::Tool { node, error, .. }) => {
            assert_eq!(node, "book");
            assert_eq!(error.kind(), ToolErrorKind::CapabilityDenied);
        }
        other => panic!("{other:?}"),
    }
    let state = book
        .run(
            &run,
            start(),
            &ToolContext::new().with_grant("bookings:write"),
        )
        .await
        .unwrap();
    assert_eq!(state["booking"], "booked Oslo");
}

#[tokio::test]
async fn a_recorded_run_replays_without_calling_the_broker() {
    use tackle::replay::Mode;
    use tackle::{replay::CassetteConfig, Cassette};

    let dir = std::env::temp_dir().join(format!("tackle-pipeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("handoff.json");
    let pipeline = Pipeline::from_yaml(DOC).unwrap();
    let run = |mode: Mode, broker: Arc<EchoBroker>| {
        let path = path.clone();
        let pipeline = pipeline.clone();
        async move {
            let cassette = Cassette::open(
                &path,
                CassetteConfig::new()
                    .with_mode(mode)
                    .with_env_overrides(false),
            )
            .unwrap();
            let run = new_run().with_cassette(cassette.clone());
            let ctx = ToolContext::new()
                .with_grant("agents:travel")
                .with_grant("tools:broker_request")
                .with_resource(BrokerHandle(broker));
            let state = pipeline.run(&run, start(), &ctx).await;
            cassette.finish().unwrap();
            state
        }
    };
    let live = Arc::new(EchoBroker::default());
    let recorded = run(Mode::Rewrite, live.clone()).await.unwrap();
    assert_eq!(live.sent.lock().unwrap().len(), 1);

    let offline = Arc::new(EchoBroker::default());
    let replayed = run(Mode::Replay, offline.clone()).await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(replayed, recorded);
    assert!(
        offline.sent.lock().unwrap().is_empty(),
        "the broker was not called"
    );
}

#[test]
fn input_state_and_merge_belong_to_tool_nodes_and_exclude_their_pairs() {
    let bad = |node: &str| match Pipeline::from_yaml(&format!("name: p\nnodes:\n{node}")) {
        Err(PipelineError::BadNode { message, .. }) => message,
        other => panic!("{other:?}"),
    };
    assert!(bad(
        "  - id: a\n    kind: tool\n    tool: t\n    input_state: true\n    inputs: {x: 1}\n"
    )
    .contains("exclude"));
    assert!(
        bad("  - id: a\n    kind: tool\n    tool: t\n    merge: true\n    out: y\n")
            .contains("exclude")
    );
    assert!(bad("  - id: a\n    kind: broker\n    merge: true\n").contains("tool nodes"));
    let fine = Pipeline::from_yaml(
        "name: p\nnodes:\n  - id: a\n    kind: tool\n    tool: t\n    input_state: true\n    merge: true\n",
    )
    .unwrap();
    assert!(fine.nodes[0].input_state && fine.nodes[0].merge);
}
