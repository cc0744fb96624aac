//! What each provider client puts on the wire for a tool of every class: an agent
//! offered the whole `provider_oracles` fixture (scalars, options at every depth,
//! structs in vectors, documented and tagged enums, maps, tuples, `serde_json::Value`,
//! flatten, defaults, a recursive type, a field named `properties`, bounds, a tool
//! without parameters...) runs once through each client against a server on
//! 127.0.0.1, and the tools part of the request it sends is kept, tool by tool, in a
//! golden file per client (`tests/golden/wire/<client>.json`, keyed by the tool's name,
//! as sent). A change to a form, ours or a client library's, shows in review as a
//! diff of those files.
//!
//! Each tool as sent is also checked against the form `tackle::agent::providers`
//! computes for it (the form the client is documented to send), the order of every
//! object's keys included, so a client library that changes a form on its way out
//! fails here; and that form against the one [`definition`] gives the client's
//! provider (the form the golden files of `providers.rs` hold and `provider_oracles`
//! checks with the providers' SDKs; for the clients without strict mode, OpenAI's with
//! strict mode off). Where they differ, [`DEPARTURES`] would say so, tool by tool: it
//! is empty, every client sends its provider's form.
//!
//! A tool whose name a client library would make a provider's built-in tool
//! (`web.search@1`, whose name would be `web_search`) is offered under another name and
//! sent as an ordinary function, its schema whole; a model's call of that name reaches
//! it ([`a_tool_named_like_a_built_in_goes_as_a_function_and_is_called`]).
//!
//! After an intended change:
//! `TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents providers_wire_classes`,
//! then read the diff of `suite/tests/golden/wire/*.json`.

use crate::provider_oracles::{fixture, CLASSES};
use crate::support::fake_endpoint::{FakeEndpoint, Reply};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tackle::agent::genai::{GenAiModel, GenAiProvider};
use tackle::agent::model::ChatModel;
use tackle::agent::ollama::OllamaModel;
use tackle::agent::openai::OpenAiModel;
use tackle::agent::providers::{
    anthropic, definition, definition_of, openai_definition, openai_form, openai_non_strict,
    Provider, ProviderNames, RESERVED_NAMES,
};
use tackle::agent::react::model_name;
use tackle::registry::Tool;
use tackle::{tool, Agent, Run, Runtime};

/// The time limit of one completion: the server answers at once, this only bounds a
/// test that went wrong.
const LIMIT: Duration = Duration::from_secs(20);

/// The provider clients, each as an agent would use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    /// `GenAiModel` of `GenAiProvider::Anthropic` (genai's Anthropic adapter).
    Anthropic,
    /// `GenAiModel` of `GenAiProvider::Gemini` (genai's Gemini adapter).
    Gemini,
    /// `GenAiModel` of `GenAiProvider::OpenAiResponses` (tackle's own Responses body).
    OpenAiResponses,
    /// `OpenAiModel` as built (chat completions, strict mode off).
    OpenAiChat,
    /// `OpenAiModel::with_strict(true)`.
    OpenAiChatStrict,
    /// `OllamaModel` (Ollama's native chat API).
    Ollama,
}

impl Client {
    const ALL: [Client; 6] = [
        Client::Anthropic,
        Client::Gemini,
        Client::OpenAiResponses,
        Client::OpenAiChat,
        Client::OpenAiChatStrict,
        Client::Ollama,
    ];

    /// The name of its golden file, `tests/golden/wire/<name>.json`.
    fn name(self) -> &'static str {
        match self {
            Client::Anthropic => "anthropic",
            Client::Gemini => "gemini",
            Client::OpenAiResponses => "openai-responses",
            Client::OpenAiChat => "openai-chat",
            Client::OpenAiChatStrict => "openai-chat-strict",
            Client::Ollama => "ollama",
        }
    }

    /// The client, talking to `server`.
    fn model(self, server: &FakeEndpoint) -> Arc<dyn ChatModel> {
        let genai = |provider| {
            GenAiModel::new(provider, &format!("{}/", server.base), "test-key", "m-1")
                .unwrap()
                .with_timeout(LIMIT)
                .unwrap()
        };
        let chat = || {
            OpenAiModel::new(&server.base, "m-1")
                .unwrap()
                .with_timeout(LIMIT)
        };
        match self {
            Client::Anthropic => Arc::new(genai(GenAiProvider::Anthropic)),
            Client::Gemini => Arc::new(genai(GenAiProvider::Gemini)),
            Client::OpenAiResponses => Arc::new(genai(GenAiProvider::OpenAiResponses)),
            Client::OpenAiChat => Arc::new(chat()),
            Client::OpenAiChatStrict => Arc::new(chat().with_strict(true)),
            Client::Ollama => Arc::new(
                OllamaModel::new(server.base.trim_end_matches("/v1"), "m-1")
                    .unwrap()
                    .with_timeout(LIMIT),
            ),
        }
    }

    /// A reply in its provider's protocol with the text [`ANSWER`] (ending the run).
    fn answer(self) -> Value {
        match self {
            Client::Anthropic => json!({
                "id": "m", "type": "message", "role": "assistant", "model": "m-1",
                "content": [{"type": "text", "text": ANSWER}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}
            }),
            Client::Gemini => json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]}}]
            }),
            Client::OpenAiResponses => json!({
                "id": "r", "object": "response", "status": "completed", "model": "m-1",
                "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}]
            }),
            Client::OpenAiChat | Client::OpenAiChatStrict => json!({
                "id": "c", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": ANSWER}}]
            }),
            Client::Ollama => json!({
                "model": "m-1", "done": true,
                "message": {"role": "assistant", "content": ANSWER}
            }),
        }
    }

    /// The tools of a request body, each whole as sent, with its name.
    fn sent_tools(self, body: &Value) -> Vec<(String, Value)> {
        let tools = body["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no `tools` in the request: {body}", self.name()));
        let tools: Vec<&Value> = match self {
            // Gemini: one `functionDeclarations` entry holds every function.
            Client::Gemini => {
                assert_eq!(tools.len(), 1, "gemini: one tools entry: {tools:?}");
                tools[0]["functionDeclarations"]
                    .as_array()
                    .expect("gemini: `tools[0].functionDeclarations`")
                    .iter()
                    .collect()
            }
            _ => tools.iter().collect(),
        };
        let name_at = match self {
            Client::OpenAiChat | Client::OpenAiChatStrict | Client::Ollama => "/function/name",
            _ => "/name",
        };
        tools
            .into_iter()
            .map(|tool| {
                let name = tool
                    .pointer(name_at)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| {
                        panic!("{}: a tool without `{name_at}`: {tool}", self.name())
                    });
                (name.to_owned(), tool.clone())
            })
            .collect()
    }

    /// The tool as this client is documented to send it, offered as `name`: the form
    /// `tackle::agent::providers` computes for it with the functions the client uses,
    /// its keys in the order sent.
    fn expected(self, tool: &Tool, name: &str) -> Value {
        let spec = tool.spec();
        let schema = &spec.input_schema;
        match self {
            Client::Anthropic => {
                definition_of(Provider::Anthropic, name, &spec.description, schema)
            }
            Client::Gemini => definition_of(Provider::Gemini, name, &spec.description, schema),
            // The chat completions form, its function's fields one level up.
            Client::OpenAiResponses => {
                let openai = definition_of(Provider::OpenAi, name, &spec.description, schema);
                let mut tool = json!({"type": "function"});
                for (k, v) in openai["function"].as_object().unwrap() {
                    tool[k] = v.clone();
                }
                tool
            }
            Client::OpenAiChatStrict => {
                openai_definition(name, &spec.description, &openai_form(schema))
            }
            // OpenAI's form with strict mode off, for every tool.
            Client::OpenAiChat | Client::Ollama => {
                openai_definition(name, &spec.description, &openai_non_strict(schema))
            }
        }
    }

    /// What this client's form is measured against, by name: the form
    /// `tackle::agent::providers` gives its provider.
    fn reference_name(self) -> &'static str {
        match self {
            Client::Anthropic => "definition(Anthropic)",
            Client::Gemini => "definition(Gemini)",
            Client::OpenAiResponses | Client::OpenAiChatStrict => "definition(OpenAi)",
            Client::OpenAiChat | Client::Ollama => "definition(OpenAi) with strict mode off",
        }
    }

    /// The form of [`reference_name`](Self::reference_name), in this client's envelope
    /// (so that only a form that differs differs). Strict mode off is what
    /// `openai_form` sends for a schema strict mode cannot say: the schema with an
    /// object at the root, which is `anthropic`'s form.
    fn reference(self, tool: &Tool, name: &str) -> Value {
        match self {
            Client::Anthropic => definition(Provider::Anthropic, tool, name),
            Client::Gemini => definition(Provider::Gemini, tool, name),
            Client::OpenAiChatStrict => definition(Provider::OpenAi, tool, name),
            Client::OpenAiResponses => {
                let form = definition(Provider::OpenAi, tool, name);
                let mut tool = json!({"type": "function"});
                for (k, v) in form["function"].as_object().unwrap() {
                    tool[k] = v.clone();
                }
                tool
            }
            Client::OpenAiChat | Client::Ollama => json!({"type": "function", "function": {
                "name": name,
                "description": tool.spec().description,
                "parameters": anthropic(&tool.spec().input_schema),
                "strict": false,
            }}),
        }
    }
}

/// What the model answers, ending each run.
const ANSWER: &str = "I have the tools I need.";

/// Where a client's form of a tool is not the one `tackle::agent::providers` gives its
/// provider ([`Client::reference`]), on purpose or not: the client, the tools (by their
/// name in the fixture) and why. The test fails when the set of tools that differ
/// changes, so a new departure is seen (and a fixed one too). None: each client sends
/// its provider's form, as it is.
const DEPARTURES: &[(Client, &[&str], &str)] = &[];

/// Records the tools part of the request each provider client sends for the whole
/// `provider_oracles` fixture (a tool of every class), offered by an [`Agent`] as a
/// real run offers them, against `tests/golden/wire/<client>.json`; and checks each tool
/// as sent against the form `tackle::agent::providers` computes for its client.
///
/// After an intended change to a form:
/// `TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents providers_wire_classes`
/// rewrites the golden files; read their diff before committing it.
#[tokio::test]
async fn each_client_sends_every_class_of_tool_as_recorded() {
    let runtime = Arc::new(fixture());
    let tools: Vec<Arc<Tool>> = runtime.registry().list().cloned().collect();
    assert_eq!(
        tools.len(),
        CLASSES.len(),
        "one fixture tool per class of provider_oracles::CLASSES"
    );
    let mut keys: Vec<&str> = tools.iter().map(|t| t.key()).collect();
    keys.sort_unstable();
    // The names an agent offers the tools under (one map for every provider).
    let names = ProviderNames::new(Provider::OpenAi, keys.iter().copied()).unwrap();
    let fixture_name = |key: &str| -> String {
        let path = key.split('@').next().unwrap_or(key);
        path.trim_start_matches("forms.").to_owned()
    };

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/wire");
    let update = std::env::var_os("TACKLE_UPDATE_GOLDEN").is_some();
    let mut golden_mismatches = Vec::new();
    let mut altered = Vec::new();
    let mut departures = Vec::new();

    for client in Client::ALL {
        let server = FakeEndpoint::start(vec![Reply::Json(200, client.answer())]).await;
        let agent = Agent::with_model(client.model(&server)).tools(keys.iter().copied());
        let run = Run::new(&runtime);
        let state = tokio::time::timeout(LIMIT * 2, agent.run(&run, "Say which tools you have."))
            .await
            .unwrap_or_else(|_| panic!("{}: the run did not end", client.name()))
            .unwrap_or_else(|e| panic!("{}: the run failed: {e}", client.name()))
            .state;
        assert_eq!(state.final_answer.as_deref(), Some(ANSWER), "{client:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{client:?}: one request");

        // The tools as sent, by name.
        let sent = client.sent_tools(&seen[0].body);
        let sent_names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
        let offered: Vec<&str> = keys.iter().map(|k| names.name_of(k).unwrap()).collect();
        assert_eq!(
            sent_names, offered,
            "{client:?}: every fixture tool, once, in the order offered"
        );

        // Each as `tackle::agent::providers` computes it for this client (key order
        // included), and whether that is the form it gives the client's provider.
        let mut differing = BTreeSet::new();
        for (name, tool_sent) in &sent {
            let key = names.key_of(name).unwrap();
            let tool = runtime.registry().resolve(key).unwrap();
            let expected = client.expected(tool, name);
            if let Some(at) = first_difference(&expected, tool_sent, "", Against::Expected) {
                altered.push(format!(
                    "{}: {name} is not sent as computed: {at}",
                    client.name()
                ));
            }
            if first_difference(&client.reference(tool, name), tool_sent, "", Against::Form)
                .is_some()
            {
                differing.insert(fixture_name(key));
            }
        }
        let (listed, why) = DEPARTURES
            .iter()
            .find(|(c, _, _)| *c == client)
            .map_or((BTreeSet::new(), ""), |(_, tools, why)| {
                (tools.iter().map(|t| (*t).to_owned()).collect(), *why)
            });
        if differing != listed {
            departures.push(format!(
                "{}: the tools whose form is not {}'s changed ({why}):\n    \
                 now differ, not listed: {:?}\n    listed, no longer differ: {:?}",
                client.name(),
                client.reference_name(),
                differing.difference(&listed).collect::<Vec<_>>(),
                listed.difference(&differing).collect::<Vec<_>>(),
            ));
        }

        // The golden file: every tool as sent, by name.
        let mut by_name: BTreeMap<&str, &Value> = BTreeMap::new();
        for (name, tool) in &sent {
            by_name.insert(name, tool);
        }
        let recorded: Map<String, Value> = by_name
            .into_iter()
            .map(|(n, t)| (n.to_owned(), t.clone()))
            .collect();
        let recorded = Value::Object(recorded);
        let text = serde_json::to_string_pretty(&recorded).unwrap() + "\n";
        let path = dir.join(format!("{}.json", client.name()));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let golden = match std::fs::read_to_string(&path) {
            Ok(golden) => golden,
            Err(e) => {
                golden_mismatches.push(format!(
                    "{}: {e} (write it with TACKLE_UPDATE_GOLDEN=1)",
                    path.display()
                ));
                continue;
            }
        };
        if golden != text {
            golden_mismatches.push(format!(
                "{}:\n  {}",
                path.display(),
                golden_difference(&golden, &recorded).join("\n  ")
            ));
        }
    }

    let mut problems = Vec::new();
    if !golden_mismatches.is_empty() {
        problems.push(format!(
            "the tools sent differ from the golden files (if intended: \
             TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents \
             providers_wire_classes, then review the diff of suite/tests/golden/wire/):\n{}",
            golden_mismatches.join("\n")
        ));
    }
    if !altered.is_empty() {
        problems.push(format!(
            "a client sends a form other than tackle::agent::providers computes:\n{}",
            altered.join("\n")
        ));
    }
    if !departures.is_empty() {
        problems.push(format!(
            "the departures from providers::definition changed (update DEPARTURES if \
             intended):\n{}",
            departures.join("\n")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Where a golden file's text and the tools now sent differ: the first differing tool
/// and the JSON pointer of its first difference, and how many tools differ.
fn golden_difference(golden: &str, sent: &Value) -> Vec<String> {
    let golden: Value = match serde_json::from_str(golden) {
        Ok(v) => v,
        Err(e) => return vec![format!("the golden file is not JSON: {e}")],
    };
    let (Some(old), Some(new)) = (golden.as_object(), sent.as_object()) else {
        return vec!["the golden file is not an object of tools by name".into()];
    };
    let mut lines = Vec::new();
    let mut differing = 0;
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for name in names {
        let line = match (old.get(name), new.get(name)) {
            (Some(_), None) => Some(format!("{name}: in the golden file, not sent")),
            (None, Some(_)) => Some(format!("{name}: sent, not in the golden file")),
            (Some(a), Some(b)) => {
                first_difference(a, b, "", Against::Golden).map(|d| format!("{name}: {d}"))
            }
            (None, None) => None,
        };
        if let Some(line) = line {
            differing += 1;
            if lines.is_empty() {
                lines.push(format!("first difference: {line}"));
            }
        }
    }
    if differing == 0 {
        let order: Vec<&String> = old.keys().collect();
        let sorted: Vec<&String> = new.keys().collect();
        lines.push(if order != sorted {
            "the tools are in another order than by name".to_owned()
        } else {
            "the same JSON, formatted otherwise".to_owned()
        });
    } else {
        lines.push(format!("{differing} tool(s) differ"));
    }
    lines
}

/// What a tool as sent is compared with.
#[derive(Clone, Copy, PartialEq)]
enum Against {
    /// The form the client is documented to send, key order included.
    Expected,
    /// A form to tell apart from another, key order aside.
    Form,
    /// The golden file, key order included.
    Golden,
}

impl Against {
    fn label(self) -> &'static str {
        match self {
            Against::Expected | Against::Form => "expected",
            Against::Golden => "golden",
        }
    }
}

/// The first place `a` (what `against` says) and `b` (the tool as sent) differ, as a
/// JSON pointer with both values.
fn first_difference(a: &Value, b: &Value, at: &str, against: Against) -> Option<String> {
    let was = against.label();
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match y.get(k) {
                    None => return Some(format!("{here}: {was} {}, not sent", short(v))),
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, &here, against) {
                            return Some(d);
                        }
                    }
                }
            }
            if let Some((k, w)) = y.iter().find(|(k, _)| !x.contains_key(*k)) {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                return Some(format!("{here}: not {was}, sent {}", short(w)));
            }
            let (xs, ys): (Vec<_>, Vec<_>) = (x.keys().collect(), y.keys().collect());
            (against != Against::Form && xs != ys).then(|| {
                format!(
                    "{}: keys in another order: {was} {xs:?}, sent {ys:?}",
                    or_root(at)
                )
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(v, w, &format!("{at}/{i}"), against) {
                    return Some(d);
                }
            }
            (x.len() != y.len())
                .then(|| format!("{}: {was} {} items, sent {}", or_root(at), x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{}: {was} {}, sent {}", or_root(at), short(a), short(b))),
    }
}

fn or_root(at: &str) -> &str {
    if at.is_empty() {
        "(the tool)"
    } else {
        at
    }
}

/// `value` as JSON, cut to 160 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Searches the web (here: says what it would search for). Its key, `web.search@1`,
/// would be named `web_search`: the name genai 0.7.2 sends to Anthropic as Anthropic's
/// own web search tool, without this tool's schema.
#[tool(namespace = "web", side_effects = none)]
fn search(query: String) -> String {
    format!("results for {query}")
}

/// A tool keyed `web.search@1` is offered as `web_search_v1` (never as a name a client
/// library turns into a provider's built-in tool, [`RESERVED_NAMES`]), goes to
/// Anthropic and Gemini as an ordinary function with its schema, in its provider's
/// form, and a model's call of `web_search_v1` reaches the tool.
#[tokio::test]
async fn a_tool_named_like_a_built_in_goes_as_a_function_and_is_called() {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let key = "web.search@1";
    let tool = runtime.registry().resolve(key).unwrap();
    assert_eq!(Provider::Anthropic.name_for(key), "web_search");
    assert!(RESERVED_NAMES.contains(&"web_search"));
    let name = "web_search_v1";
    assert_eq!(model_name(key), name, "the name an agent offers it under");

    for client in [Client::Anthropic, Client::Gemini] {
        let provider = match client {
            Client::Anthropic => Provider::Anthropic,
            _ => Provider::Gemini,
        };
        let call = match client {
            Client::Anthropic => json!({
                "id": "m", "type": "message", "role": "assistant", "model": "m-1",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": name,
                             "input": {"query": "rust"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}
            }),
            _ => json!({
                "candidates": [{"content": {"role": "model", "parts": [
                    {"functionCall": {"name": name, "args": {"query": "rust"}}}
                ]}, "finishReason": "STOP"}]
            }),
        };
        let server = FakeEndpoint::start(vec![
            Reply::Json(200, call),
            Reply::Json(200, client.answer()),
        ])
        .await;
        let agent = Agent::with_model(client.model(&server)).tools([key]);
        let run = Run::new(&runtime);
        let state = tokio::time::timeout(LIMIT * 2, agent.run(&run, "Search for rust."))
            .await
            .unwrap_or_else(|_| panic!("{}: the run did not end", client.name()))
            .unwrap_or_else(|e| panic!("{}: the run failed: {e}", client.name()))
            .state;
        assert_eq!(state.final_answer.as_deref(), Some(ANSWER), "{client:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "{client:?}: a call, then the answer");

        // An ordinary function, in the provider's form: its description and schema.
        let sent = client.sent_tools(&seen[0].body);
        assert_eq!(
            sent,
            vec![(name.to_owned(), definition(provider, tool, name))],
            "{client:?}"
        );
        let tool_sent = &sent[0].1;
        assert!(tool_sent.get("type").is_none(), "{client:?}: {tool_sent}");
        let schema = match client {
            Client::Anthropic => &tool_sent["input_schema"],
            _ => &tool_sent["parameters"],
        };
        assert_eq!(
            schema["required"],
            json!(["query"]),
            "{client:?}: {tool_sent}"
        );
        assert!(
            !seen[0].body.to_string().contains("web_search\""),
            "{client:?}: no tool named `web_search`: {}",
            seen[0].body
        );

        // The call of `web_search_v1` reached the tool: its result went back.
        let next = seen[1].body.to_string();
        assert!(
            next.contains("results for rust"),
            "{client:?}: the tool's result in the next request: {next}"
        );
    }
}
