//! tackle's importer as the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, `conformance client`).
//!
//! The suite starts a test server for one scenario and runs this program with the
//! server's URL as its last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO`
//! and, for some scenarios, JSON in `MCP_CONFORMANCE_CONTEXT` (a pre-registered
//! client's ID and secret). The program does what the scenario asks with tackle's
//! public API only: it imports the server's tools over streamable HTTP
//! ([`tackle_mcp::import_http`]), with an [`OAuthClient`] for the `auth/*` scenarios,
//! and calls the scenario's tools through the door. It exits 0 when everything it did
//! succeeded, 1 otherwise (with the reason on stderr). The import negotiates the
//! revision (`Lifecycle::Negotiate`, the default): 2026-07-28 with a server that
//! answers `server/discover`, 2025-11-25's `initialize` otherwise.
//!
//! ```text
//! scripts/mcp-conformance --client     # every client scenario of both revisions, one by one
//! ```
//!
//! The test authorization server approves at once: its authorization endpoint
//! redirects straight to the redirect URI with a code. The [`Authorizer`] here reads
//! that redirect without following it, where a desktop program would open a browser.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::{Registry, Run, Runtime, ToolContext};
use tackle_mcp::client::Elicited;
use tackle_mcp::{import_http, Authorizer, ImportOptions, OAuthClient};

/// Where the authorization server sends the browser back; nothing listens there, the
/// [`Headless`] authorizer reads the redirect instead.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// This client's metadata document (SEP-991): its client ID where the authorization
/// server supports client ID metadata documents.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// An authorizer for an authorization server that approves at once: it asks for the
/// authorization page without following the redirect, and gives back where the
/// redirect points.
struct Headless(reqwest::Client);

impl Authorizer for Headless {
    fn authorize(&self, url: String) -> tackle_mcp::oauth_client::AuthorizeFuture<'_> {
        Box::pin(async move {
            let answer = self.0.get(&url).send().await.map_err(|e| e.to_string())?;
            let location = answer
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "no redirect from the authorization server ({})",
                        answer.status()
                    )
                })?;
            Ok(location.to_owned())
        })
    }
}

/// The issuer of the authorization server the MCP server at `url` names: its
/// Protected Resource Metadata (the challenge's, else the well-known paths), then that
/// authorization server's metadata. A pre-registered client's secret goes only to the
/// issuer it was registered with (`OAuthClient::with_issuer`); the conformance
/// context does not say which that is, and the scenario's own server is the one that
/// registered it, so asking it is right here, and only here: a real program knows
/// its issuer from where it registered its client.
async fn issuer_of(url: &str) -> Result<String, String> {
    let http = reqwest::Client::new();
    let get_json = |target: String| {
        let http = http.clone();
        async move {
            let answer = http.get(&target).send().await.ok()?;
            if !answer.status().is_success() {
                return None;
            }
            serde_json::from_slice::<Value>(&answer.bytes().await.ok()?).ok()
        }
    };
    let base = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/').to_owned();
    let mut documents = Vec::new();
    let challenge = http.post(url).send().await.map_err(|e| e.to_string())?;
    if let Some(header) = challenge
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|h| h.to_str().ok())
    {
        if let Some((_, rest)) = header.split_once("resource_metadata=\"") {
            if let Some((named, _)) = rest.split_once('"') {
                documents.push(named.to_owned());
            }
        }
    }
    documents.push(format!(
        "{origin}/.well-known/oauth-protected-resource{path}"
    ));
    documents.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let mut server = None;
    for document in documents {
        if let Some(metadata) = get_json(document).await {
            server = metadata["authorization_servers"][0]
                .as_str()
                .map(str::to_owned);
            if server.is_some() {
                break;
            }
        }
    }
    let server = server.ok_or("the server names no authorization server")?;
    let server_url = reqwest::Url::parse(&server).map_err(|e| e.to_string())?;
    let (as_origin, as_path) = (
        server_url.origin().ascii_serialization(),
        server_url.path().trim_end_matches('/').to_owned(),
    );
    for metadata in [
        format!("{as_origin}/.well-known/oauth-authorization-server{as_path}"),
        format!("{as_origin}/.well-known/openid-configuration{as_path}"),
        format!("{as_origin}{as_path}/.well-known/openid-configuration"),
    ] {
        if let Some(issuer) = get_json(metadata)
            .await
            .and_then(|m| m["issuer"].as_str().map(str::to_owned))
        {
            return Ok(issuer);
        }
    }
    Err(format!("the authorization server {server} has no metadata"))
}

/// The OAuth client of an `auth/*` scenario for the server at `url`: the context's
/// pre-registered client when it gives one, else a client ID metadata document or
/// dynamic registration.
async fn oauth_for(scenario: &str, context: &Value, url: &str) -> Result<OAuthClient, String> {
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    if scenario.starts_with("auth/client-credentials") {
        let (Some(id), Some(secret)) = (field("client_id"), field("client_secret")) else {
            return Err("the context gives no client ID and secret".to_owned());
        };
        return Ok(OAuthClient::client_credentials(id, secret).with_issuer(issuer_of(url).await?));
    }
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut oauth = OAuthClient::new(REDIRECT_URI, Headless(browser))
        .with_client_name("tackle conformance client")
        .with_client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = field("client_id") {
        let secret = field("client_secret");
        if secret.is_some() {
            oauth = oauth.with_issuer(issuer_of(url).await?);
        }
        oauth = oauth.with_registered_client(id, secret);
    }
    Ok(oauth)
}

/// The tools a scenario calls, in order, and with what (none: the scenario only
/// connects and lists). A scenario whose context lists `toolCalls` calls those.
fn calls_of(scenario: &str, context: &Value) -> Vec<(String, Value)> {
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        return calls
            .iter()
            .map(|call| {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                (name, without_nulls(&call["arguments"]))
            })
            .collect();
    }
    let one = |tool: &str, input: Value| vec![(tool.to_owned(), input)];
    match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Vec::new(),
        "tools_call" => one("add_numbers", json!({"a": 5, "b": 10})),
        "elicitation-sep1034-client-defaults" => one("test_client_elicitation_defaults", json!({})),
        "sse-retry" => one("test_reconnection", json!({})),
        // Each of the server's input-requiring tools, answered and made again.
        "sep-2322-client-request-state" => [
            "test_mrtr_echo_state",
            "test_mrtr_no_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_result_type",
        ]
        .into_iter()
        .map(|tool| (tool.to_owned(), json!({})))
        .collect(),
        "http-standard-headers" => one("test_headers", json!({})),
        // The one tool of the listing whose header annotations are valid.
        "http-invalid-tool-headers" => one("valid_tool", json!({"region": "us-west1"})),
        // Filled in from the listing (`run`): the schema as the import keeps it.
        "json-schema-2020-12-preservation" => one("json_schema_echo", Value::Null),
        // The auth scenarios serve one tool; calling it is what needs the token.
        _ => one("test-tool", json!({})),
    }
}

/// `arguments` without its null members: an argument given as `null` is one not
/// given (the tool's schema says which may be left out).
fn without_nulls(arguments: &Value) -> Value {
    match arguments {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => json!({}),
    }
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    // The server's questions are calls of a run of their own, through its door.
    let door = Arc::new(Runtime::new(Registry::new()));
    let mut options = ImportOptions::new("conformance")
        .with_requires(Vec::<String>::new())
        // Accept every form as its defaults fill it (the importer fills in the
        // schema's defaults of the fields an answer leaves out, SEP-1034).
        .with_elicitation(|_question| async { Elicited::Accept(json!({})) })
        .with_door(
            Run::new(&door),
            ToolContext::new().with_grant("mcp:conformance"),
        );
    if scenario.starts_with("auth/") {
        options = options.with_oauth(oauth_for(scenario, context, url).await?);
    }
    let mut registry = Registry::new();
    let import = import_http(&mut registry, url, options)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("imported {:?}", import.keys());
    let key_of = |tool: &str| {
        import
            .keys()
            .iter()
            .find(|key| key.starts_with(&format!("mcp.conformance.{tool}@")))
            .cloned()
            .ok_or_else(|| format!("the server offers no tool `{tool}`"))
    };
    let mut calls = Vec::new();
    for (tool, mut input) in calls_of(scenario, context) {
        if scenario == "json-schema-2020-12-preservation" {
            // Echo the other tool's input schema, as the import holds it.
            let held = registry
                .get(&key_of("json_schema_2020_12_tool")?)
                .map(|t| t.spec().input_schema.clone())
                .ok_or("the import lost a tool it listed")?;
            input = json!({ "schema": held });
        }
        calls.push((key_of(&tool)?, input));
    }
    let runtime = Runtime::new(registry);
    let mut outcome = Ok(());
    for (key, input) in calls {
        match runtime.call(&key, input, &ToolContext::new()).await {
            Ok(output) => eprintln!("{key} gave {output}"),
            Err(e) => {
                outcome = Err(e.to_string());
                break;
            }
        }
    }
    import.close().await;
    outcome
}

#[tokio::main]
async fn main() -> ExitCode {
    // The suite appends the server's URL to the command: the last argument.
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: mcp_conformance_client <server URL> (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scenario {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
