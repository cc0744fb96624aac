//! Seeds 000 and 002: the graph documents of the seed texts run as written, the broker
//! node and the `nautilus.broker_request@1` tool write the response plus the
//! `__stargraph_provenance__` envelope, and each of the seed's errors names the field
//! or node and leaves the state as it was.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tackle::pipeline::{
    broker_request_tool, Broker, BrokerFuture, BrokerHandle, BrokerNode, BrokerNodeConfig,
    BrokerResponse, Pipeline, PipelineError, BROKER_CAPABILITY, PROVENANCE_KEY,
};
use tackle::replay::Mode;
use tackle::{
    replay::CassetteConfig, spec::ReplayPolicy, Cassette, Run, Runtime, SideEffects, ToolContext,
};

/// Seed 002's YAML, verbatim.
const SEED_002: &str = include_str!("seeds/002_broker_node.yaml");
/// Seed 000's graph, verbatim.
const SEED_000: &str = include_str!("seeds/000_nautilus_demo.yaml");

/// A broker double: answers with a request id and notes what it was asked.
#[derive(Default)]
struct Double {
    asked: Mutex<Vec<(String, String)>>,
}

impl Broker for Double {
    fn request<'a>(&'a self, agent_id: &'a str, intent: &'a str) -> BrokerFuture<'a> {
        Box::pin(async move {
            let mut asked = self.asked.lock().unwrap();
            asked.push((agent_id.to_owned(), intent.to_owned()));
            Ok(BrokerResponse::new(format!("req-{}", asked.len()))
                .with_field("status", json!("accepted"))
                .with_field("answer", json!(format!("{agent_id} will {intent}"))))
        })
    }
}

fn granted(broker: &Arc<Double>) -> ToolContext {
    ToolContext::new()
        .with_grant(BROKER_CAPABILITY)
        .with_resource(BrokerHandle(broker.clone()))
}

fn runtime() -> Runtime {
    let mut rt = Runtime::from_inventory_in(module_path!()).unwrap();
    rt.registry_mut().register(broker_request_tool()).unwrap();
    rt
}

/// A run over [`runtime`].
fn new_run() -> Run {
    Run::new(&Arc::new(runtime()))
}

#[tokio::test]
async fn seed_002s_graph_runs_as_written() {
    let doc = Pipeline::from_yaml(SEED_002).unwrap();
    assert_eq!(
        doc.state_schema,
        *json!({"agent_id": "str", "intent": "str"})
            .as_object()
            .unwrap()
    );
    assert_eq!(doc.tools[0].id, "broker_request");
    assert_eq!(doc.tools[0].version, "1.0");
    let broker = Arc::new(Double::default());
    let state = json!({"agent_id": "triage", "intent": "route ticket 7"});
    let out = doc.run(&new_run(), state, &granted(&broker)).await.unwrap();
    assert_eq!(
        out,
        json!({
            "agent_id": "triage",
            "intent": "route ticket 7",
            "broker": {
                "request_id": "req-1",
                "status": "accepted",
                "answer": "triage will route ticket 7",
                "__stargraph_provenance__": {
                    "origin": "tool",
                    "source": "nautilus",
                    "external_id": "req-1",
                },
            },
        })
    );
    assert_eq!(
        broker.asked.lock().unwrap().as_slice(),
        [("triage".to_owned(), "route ticket 7".to_owned())]
    );
}

#[tokio::test]
async fn seed_000s_graph_calls_the_broker_tool() {
    let doc = Pipeline::from_yaml(SEED_000).unwrap();
    assert_eq!(doc.name, "nautilus_demo");
    let broker = Arc::new(Double::default());
    let out = doc
        .run(
            &new_run(),
            json!({"user_intent": "book a room"}),
            &granted(&broker),
        )
        .await
        .unwrap();
    // The tool writes the same envelope as the node.
    assert_eq!(
        out["broker_reply"],
        json!({
            "request_id": "req-1",
            "status": "accepted",
            "answer": "agent-42 will book a room",
            PROVENANCE_KEY: {"origin": "tool", "source": "nautilus", "external_id": "req-1"},
        })
    );
    let tool = runtime();
    let spec = tool
        .registry()
        .resolve("nautilus.broker_request@1")
        .unwrap()
        .spec()
        .clone();
    assert_eq!(spec.side_effects, SideEffects::Read);
    assert_eq!(spec.replay_policy, ReplayPolicy::RecordedResult);
    assert_eq!(spec.permissions, [BROKER_CAPABILITY]);
}

#[tokio::test]
async fn the_seeds_errors_name_the_field_or_node_and_keep_the_state() {
    let doc = Pipeline::from_yaml(SEED_002).unwrap();
    let run = new_run();
    let broker = Arc::new(Double::default());
    let good = json!({"agent_id": "triage", "intent": "route"});

    // A non-string agent id or intent names the field.
    for (field, bad) in [
        ("agent_id", json!(42)),
        ("intent", json!({"goal": "route"})),
    ] {
        let mut state = good.clone();
        state[field] = bad;
        match doc.run(&run, state.clone(), &granted(&broker)).await {
            Err(PipelineError::NotAString {
                node,
                field: named,
                state: kept,
                ..
            }) => {
                assert_eq!((node.as_str(), named.as_str()), ("broker", field));
                assert_eq!(*kept, state);
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    // A missing field.
    let missing = json!({"agent_id": "triage"});
    match doc.run(&run, missing.clone(), &granted(&broker)).await {
        Err(PipelineError::MissingState { node, path, state }) => {
            assert_eq!((node.as_str(), path.as_str()), ("broker", "intent"));
            assert_eq!(*state, missing);
        }
        other => panic!("{other:?}"),
    }
    // No broker registered.
    let no_broker = ToolContext::new().with_grant(BROKER_CAPABILITY);
    match doc.run(&run, good.clone(), &no_broker).await {
        Err(e @ PipelineError::MissingBroker { .. }) => {
            assert!(e.to_string().contains("no broker is registered"), "{e}");
            assert_eq!(e.state(), Some(&good));
        }
        other => panic!("{other:?}"),
    }
    // The tool form without a broker says so.
    let err = run
        .call(
            "nautilus.broker_request@1",
            json!({"agent_id": "a", "intent": "b"}),
            &no_broker,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no broker is registered"), "{err}");
    // Neither a broker nor the grant: the grant is checked first.
    match doc.run(&run, good.clone(), &ToolContext::new()).await {
        Err(PipelineError::Denied { missing, .. }) => assert_eq!(missing, [BROKER_CAPABILITY]),
        other => panic!("{other:?}"),
    }
    // A caller without tools:broker_request.
    let denied = ToolContext::new().with_resource(BrokerHandle(broker.clone()));
    match doc.run(&run, good.clone(), &denied).await {
        Err(PipelineError::Denied {
            node,
            missing,
            state,
        }) => {
            assert_eq!(node, "broker");
            assert_eq!(missing, [BROKER_CAPABILITY]);
            assert_eq!(*state, good);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        broker.asked.lock().unwrap().is_empty(),
        "no failing case reached the broker"
    );
}

#[tokio::test]
async fn a_broker_node_from_its_config() {
    let node = BrokerNode::new(BrokerNodeConfig {
        agent_id_field: "who".into(),
        intent_field: "what".into(),
        output_field: "reply".into(),
    });
    assert_eq!(BrokerNode::REQUIRES_CAPABILITIES, [BROKER_CAPABILITY]);
    assert_eq!(BrokerNode::SIDE_EFFECTS, SideEffects::Read);
    let broker = Arc::new(Double::default());
    let patch = node
        .execute(
            &new_run(),
            &json!({"who": "a", "what": "b"}),
            &granted(&broker),
        )
        .await
        .unwrap();
    assert_eq!(patch.keys().collect::<Vec<_>>(), ["reply"]);
    assert_eq!(patch["reply"][PROVENANCE_KEY]["external_id"], "req-1");
    // The config is strict, as the seed's (extra fields are refused).
    let strict: Result<BrokerNodeConfig, _> = serde_json::from_value(
        json!({"agent_id_field": "a", "intent_field": "b", "output_field": "c", "x": 1}),
    );
    assert!(strict.is_err());
}

#[tokio::test]
async fn the_broker_is_read_and_replays_without_the_broker() {
    let dir = std::env::temp_dir().join(format!("tackle-seed-broker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broker.json");
    let doc = Pipeline::from_yaml(SEED_002).unwrap();
    let run = |mode: Mode, broker: Arc<Double>| {
        let (path, doc) = (path.clone(), doc.clone());
        async move {
            let cassette = Cassette::open(
                &path,
                CassetteConfig::new()
                    .with_mode(mode)
                    .with_env_overrides(false),
            )
            .unwrap();
            let run = new_run().with_cassette(cassette.clone());
            let state = json!({"agent_id": "triage", "intent": "route"});
            let out = doc.run(&run, state, &granted(&broker)).await;
            cassette.finish().unwrap();
            out
        }
    };
    let live = Arc::new(Double::default());
    let recorded = run(Mode::Rewrite, live.clone()).await.unwrap();
    let offline = Arc::new(Double::default());
    let replayed = run(Mode::Replay, offline.clone()).await.unwrap();
    // Offline, the request needs no broker at all.
    let cassette = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let run = new_run().with_cassette(cassette);
    let no_broker = ToolContext::new().with_grant(BROKER_CAPABILITY);
    let state = json!({"agent_id": "triage", "intent": "route"});
    assert_eq!(doc.run(&run, state, &no_broker).await.unwrap(), recorded);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(replayed, recorded);
    assert_eq!(live.asked.lock().unwrap().len(), 1);
    assert!(offline.asked.lock().unwrap().is_empty());
    assert!(text.contains("nautilus.broker_request@1"), "{text}");
}

#[test]
fn a_document_value_that_is_not_an_object_is_refused() {
    let state: Value = json!("just text");
    let doc = Pipeline::from_yaml(SEED_002).unwrap();
    let run = new_run();
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(doc.run(&run, state, &ToolContext::new()));
    assert!(matches!(out, Err(PipelineError::StateNotObject(_))));
}
