//! [`ChatModel`]s for Anthropic's Messages API, Google Gemini's `generateContent` and
//! OpenAI's Responses API, on the `genai` crate's adapters.
//!
//! Built with the cargo features `anthropic`, `gemini` and `openai-responses` (plain
//! HTTP; add `genai-tls` for `https://` endpoints). One [`GenAiModel`] talks to one
//! provider at one base URL, so a test can point it at a server on 127.0.0.1 and a
//! deployment at a gateway:
//!
//! | provider | request | tools sent as | tool results sent as |
//! |---|---|---|---|
//! | [`GenAiProvider::Anthropic`] | `POST {base}messages` | `{name, description, input_schema}` (the Anthropic form) | `tool_result` blocks in a user turn |
//! | [`GenAiProvider::Gemini`] | `POST {base}models/{model}:generateContent` | one `functionDeclarations` entry of the Gemini form: `parameters` (OpenAPI) where it says the schema, else `parametersJsonSchema`, neither for a tool without parameters | `functionResponse` parts, named |
//! | [`GenAiProvider::OpenAiResponses`] | `POST {base}responses` | `function` tools in the OpenAI form (strict where strict mode can say the schema) | `function_call_output` items |
//!
//! Each tool goes exactly as [`definition_of`] gives it for the provider (the forms the
//! golden tests hold and the providers' SDKs check): for Anthropic and Gemini tackle
//! writes the body's `tools` itself, so genai's adapters do not rewrite them. Parallel
//! tool calls come back as several
//! [`ToolCallRequest`]s; the provider's token counts as [`ChatResponse::usage`].
//! Failures are typed: an error status is [`ModelError::Status`] (with the start of
//! the body), no answer in time [`ModelError::Timeout`], a body that is not the
//! provider's answer [`ModelError::Malformed`], a failed connection
//! [`ModelError::Transport`].
//!
//! Images and files of a message ([`Message::parts`]) go in the provider's form: in a
//! user message as image or document blocks (Anthropic), `inline_data` (Gemini),
//! `input_image` / `input_file` (Responses). In tool results: Anthropic gets them
//! inside the `tool_result` block, Gemini as `inline_data` parts of the same user turn
//! as its `functionResponse`s, and the Responses API as `input_image` / `input_file`
//! parts of the `function_call_output`.
//!
//! Anthropic and Gemini go through genai's adapters. The Responses API is spoken by
//! tackle itself (same [`GenAiModel`]): genai 0.7 refuses a whole Responses reply when
//! one call's arguments are not JSON, where tackle keeps the other calls and answers
//! that one with a repair turn.
//!
//! These models do not stream natively: asked to [stream](ChatModel::stream), they send
//! their reply as deltas once it is complete.

use std::collections::HashMap;
use std::time::Duration;

use genai::adapter::AdapterKind;
use genai::chat::{
    Binary, ChatMessage, ChatOptions, ChatRequest as GenAiRequest, ContentPart, CustomPart,
    JsonSpec, MessageContent, ToolCall, ToolResponse,
};
use genai::resolver::{AuthData, Endpoint};
use genai::{Client, ModelIden, WebConfig};
use serde_json::{json, Value};
use tackle_core::content::text_fallback;

use super::forms::{definition_of, drop_nulls};
use super::walk::without_dialect;
use super::wire::{excerpt, missing_tls};
use super::Provider;
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelFuture, Role, ToolCallRequest,
    ToolDefinition, UnreadableCall, Usage,
};

/// The default time limit of one completion.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default limit on an answer's tokens (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The providers [`GenAiModel`] speaks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GenAiProvider {
    /// Anthropic's Messages API (`tool_use` / `tool_result` blocks).
    Anthropic,
    /// Google Gemini's `generateContent` (`functionCall` / `functionResponse`).
    Gemini,
    /// OpenAI's Responses API (`function_call` / `function_call_output` items).
    OpenAiResponses,
}

impl GenAiProvider {
    /// The provider's name, as in the model-call key `llm.<provider>.complete@<model>`
    /// and the permission `llm:<provider>`.
    pub fn as_str(self) -> &'static str {
        match self {
            GenAiProvider::Anthropic => "anthropic",
            GenAiProvider::Gemini => "gemini",
            GenAiProvider::OpenAiResponses => "openai-responses",
        }
    }

    /// The provider's public base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            GenAiProvider::Anthropic => "https://api.anthropic.com/v1/",
            GenAiProvider::Gemini => "https://generativelanguage.googleapis.com/v1beta/",
            GenAiProvider::OpenAiResponses => "https://api.openai.com/v1/",
        }
    }

    /// The parts of a message this provider takes as images and documents, and those
    /// it does not (sent as text, see [`text_fallback`]): Anthropic takes JPEG, PNG,
    /// GIF and WebP images and PDF documents; Gemini takes any media type inline.
    fn split_parts(
        self,
        parts: &[tackle_core::content::ContentPart],
    ) -> (
        Vec<&tackle_core::content::ContentPart>,
        Vec<tackle_core::content::ContentPart>,
    ) {
        let takes = |part: &tackle_core::content::ContentPart| match (self, part) {
            (_, tackle_core::content::ContentPart::Text { .. }) => true,
            (
                GenAiProvider::Anthropic,
                tackle_core::content::ContentPart::Image { mime_type, .. },
            ) => {
                matches!(
                    mime_type.as_str(),
                    "image/jpeg" | "image/png" | "image/gif" | "image/webp"
                )
            }
            (
                GenAiProvider::Anthropic,
                tackle_core::content::ContentPart::File { mime_type, .. },
            ) => mime_type == "application/pdf",
            _ => true,
        };
        let (taken, unsent): (Vec<_>, Vec<_>) = parts.iter().partition(|p| takes(p));
        (taken, unsent.into_iter().cloned().collect())
    }

    /// Whether this build has the provider's cargo feature.
    fn built(self) -> bool {
        match self {
            GenAiProvider::Anthropic => cfg!(feature = "anthropic"),
            GenAiProvider::Gemini => cfg!(feature = "gemini"),
            GenAiProvider::OpenAiResponses => cfg!(feature = "openai-responses"),
        }
    }

    /// Whether this build reaches the provider over `https://`: genai's TLS for
    /// Anthropic and Gemini (`genai-tls`), reqwest's for the Responses API (which
    /// `openai-tls` turns on too).
    fn has_tls(self) -> bool {
        match self {
            GenAiProvider::Anthropic | GenAiProvider::Gemini => cfg!(feature = "genai-tls"),
            GenAiProvider::OpenAiResponses => {
                cfg!(any(feature = "genai-tls", feature = "openai-tls"))
            }
        }
    }

    fn adapter(self) -> AdapterKind {
        match self {
            GenAiProvider::Anthropic => AdapterKind::Anthropic,
            GenAiProvider::Gemini => AdapterKind::Gemini,
            GenAiProvider::OpenAiResponses => AdapterKind::OpenAIResp,
        }
    }

    /// The `tools` of a request body: each tool in the provider's form
    /// ([`definition_of`]) as it is, or `None` when there are none (and for the
    /// Responses API, whose body tackle writes itself).
    ///
    /// They go to genai as the request's `extra_body`, which its Anthropic and Gemini
    /// adapters set over the body's top level, not as genai `Tool`s, which the adapters
    /// rewrite: Gemini's puts every schema in `parametersJsonSchema` (where the Gemini
    /// form sends the OpenAPI `parameters` it can say), Anthropic's reorders a tool's
    /// keys, and both make a built-in tool of one with certain names (see
    /// [`RESERVED_NAMES`](super::RESERVED_NAMES)).
    fn tools_body(self, tools: &[ToolDefinition]) -> Option<Value> {
        let form = |provider: Provider| -> Vec<Value> {
            tools
                .iter()
                .map(|t| definition_of(provider, &t.name, &t.description, &t.parameters))
                .collect()
        };
        if tools.is_empty() {
            return None;
        }
        match self {
            GenAiProvider::Anthropic => Some(json!({"tools": form(Provider::Anthropic)})),
            // One entry holds every function, as Gemini asks.
            GenAiProvider::Gemini => {
                Some(json!({"tools": [{"functionDeclarations": form(Provider::Gemini)}]}))
            }
            GenAiProvider::OpenAiResponses => None,
        }
    }
}

/// A chat model behind Anthropic's, Gemini's or OpenAI's Responses API. See the
/// [module docs](self).
#[derive(Clone)]
pub struct GenAiModel {
    provider: GenAiProvider,
    model: String,
    base_url: String,
    api_key: String,
    timeout: Duration,
    max_tokens: u32,
    client: Client,
    /// The Responses API is spoken here, not through genai (see `responses`).
    #[cfg(feature = "openai-responses")]
    http: reqwest::Client,
}

impl std::fmt::Debug for GenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenAiModel")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl GenAiModel {
    /// `model` of `provider` at `base_url` (e.g. `http://127.0.0.1:8080/v1/`, or
    /// [`GenAiProvider::default_base_url`]), with `api_key`. Fails when this build
    /// lacks the provider's cargo feature, or when `base_url` is `https://` and it
    /// lacks `genai-tls` (the message names the feature).
    pub fn new(
        provider: GenAiProvider,
        base_url: &str,
        api_key: &str,
        model: &str,
    ) -> Result<GenAiModel, ModelError> {
        if !provider.built() {
            return Err(ModelError::Failed {
                message: format!(
                    "this build has no `{}` cargo feature: enable it to use this provider",
                    provider.as_str()
                ),
            });
        }
        let mut base_url = base_url.trim().to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ModelError::Transport {
                message: format!("`{base_url}` is not an http(s) URL"),
            });
        }
        if let Some(message) = missing_tls(&base_url, provider.has_tls(), "genai-tls") {
            return Err(ModelError::Transport { message });
        }
        if !base_url.ends_with('/') {
            base_url.push('/');
        }
        let client = client(provider, &base_url, api_key, DEFAULT_TIMEOUT)?;
        Ok(GenAiModel {
            provider,
            model: model.to_owned(),
            base_url,
            api_key: api_key.to_owned(),
            timeout: DEFAULT_TIMEOUT,
            max_tokens: DEFAULT_MAX_TOKENS,
            client,
            #[cfg(feature = "openai-responses")]
            http: reqwest::Client::new(),
        })
    }

    /// Sets the time limit of one completion (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<GenAiModel, ModelError> {
        self.client = client(self.provider, &self.base_url, &self.api_key, timeout)?;
        self.timeout = timeout;
        Ok(self)
    }

    /// Sets the most tokens an answer may have (default [`DEFAULT_MAX_TOKENS`]).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> GenAiModel {
        self.max_tokens = max_tokens;
        self
    }

    /// The provider.
    pub fn provider_kind(&self) -> GenAiProvider {
        self.provider
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    async fn ask(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        #[cfg(feature = "openai-responses")]
        if self.provider == GenAiProvider::OpenAiResponses {
            let body = super::responses::body(&self.model, self.max_tokens, request);
            let mut answer = super::responses::send(
                &self.http,
                &self.base_url,
                &self.api_key,
                self.timeout,
                &body,
            )
            .await?;
            // Strict tools: the model sends null for each optional field it leaves out.
            for call in &mut answer.tool_calls {
                if let Some(tool) = request.tools.iter().find(|t| t.name == call.name) {
                    drop_nulls(&mut call.arguments, &tool.parameters);
                }
            }
            return Ok(answer);
        }
        let outgoing = self.to_genai(request);
        let mut options = ChatOptions::default()
            .with_max_tokens(self.max_tokens)
            .with_capture_usage(true);
        if let Some(tools) = self.provider.tools_body(&request.tools) {
            options = options.with_extra_body(tools);
        }
        if let Some(schema) = &request.response_schema {
            options = options
                .with_response_format(JsonSpec::new("final_answer", without_dialect(schema)));
        }
        let answer = self
            .client
            .exec_chat(
                ModelIden::new(self.provider.adapter(), self.model.as_str()),
                outgoing,
                Some(&options),
            )
            .await
            .map_err(|e| self.error(e))?;
        let mut response = ChatResponse::text(answer.texts().concat());
        for (index, call) in answer.tool_calls().into_iter().enumerate() {
            let (arguments, unreadable) = match &call.fn_arguments {
                Value::String(raw) => match serde_json::from_str::<Value>(raw) {
                    Ok(parsed) => (parsed, None),
                    Err(e) => (
                        call.fn_arguments.clone(),
                        Some(format!("the arguments are not JSON ({e})")),
                    ),
                },
                Value::Null => (Value::Object(serde_json::Map::new()), None),
                other => (other.clone(), None),
            };
            if let Some(error) = unreadable {
                response.unreadable.push(UnreadableCall { index, error });
            }
            response.tool_calls.push(ToolCallRequest {
                id: call.call_id.clone(),
                name: call.fn_name.clone(),
                arguments,
            });
        }
        if self.provider == GenAiProvider::OpenAiResponses {
            // Strict tools send null for an optional field left out.
            for call in &mut response.tool_calls {
                if let Some(tool) = request.tools.iter().find(|t| t.name == call.name) {
                    drop_nulls(&mut call.arguments, &tool.parameters);
                }
            }
        }
        let usage = &answer.usage;
        if usage.prompt_tokens.is_some() || usage.completion_tokens.is_some() {
            let count = |n: Option<i32>| n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
            response.usage = Some(Usage {
                input_tokens: count(usage.prompt_tokens),
                output_tokens: count(usage.completion_tokens),
            });
        }
        Ok(response)
    }

    /// The conversation in genai's terms: tool results of one turn go together, each
    /// named after its call (Gemini needs the name), with their images and files in
    /// the provider's form (see [`ToolTurn`]).
    fn to_genai(&self, request: &ChatRequest) -> GenAiRequest {
        let mut names: HashMap<&str, &str> = HashMap::new();
        let mut messages: Vec<ChatMessage> = Vec::with_capacity(request.messages.len());
        let mut turn = ToolTurn::default();
        for message in &request.messages {
            if message.role != Role::Tool {
                turn.flush(&mut messages);
            }
            match message.role {
                Role::System => messages.push(ChatMessage::system(text_fallback(
                    &message.content,
                    &message.parts,
                ))),
                Role::User if message.parts.is_empty() => {
                    messages.push(ChatMessage::user(message.content.clone()));
                }
                Role::User => {
                    let (taken, unsent) = self.provider.split_parts(&message.parts);
                    let mut parts =
                        vec![ContentPart::Text(text_fallback(&message.content, &unsent))];
                    parts.extend(
                        taken
                            .iter()
                            .filter_map(|p| binary(p))
                            .map(ContentPart::Binary),
                    );
                    messages.push(ChatMessage::user(MessageContent::from_parts(parts)));
                }
                Role::Assistant => messages.push(assistant(message, &mut names)),
                Role::Tool => turn.add(self.provider, message, &names),
            }
        }
        turn.flush(&mut messages);
        // The tools go in the provider's form, as the request's extra body (see
        // `GenAiProvider::tools_body`).
        GenAiRequest::new(messages)
    }

    /// A genai error as a [`ModelError`].
    fn error(&self, error: genai::Error) -> ModelError {
        use genai::webc::Error as Web;
        let web = |error: Web| match error {
            Web::ResponseFailedStatus { status, body, .. } => ModelError::Status {
                status: status.as_u16(),
                body: excerpt(body.as_bytes()),
            },
            Web::ResponseFailedNotJson { body, .. } => ModelError::Malformed {
                message: format!("the body is not JSON: {}", excerpt(body.as_bytes())),
            },
            Web::ResponseFailedInvalidJson { cause, .. } => ModelError::Malformed {
                message: format!("the body is not JSON ({cause})"),
            },
            Web::Reqwest(e) if e.is_timeout() => ModelError::Timeout {
                after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            },
            Web::Reqwest(e) if e.is_decode() || e.is_body() => ModelError::Malformed {
                message: format!("the body could not be read: {}", e.without_url()),
            },
            Web::Reqwest(e) => ModelError::Transport {
                message: e.without_url().to_string(),
            },
            other => ModelError::Malformed {
                message: other.to_string(),
            },
        };
        match error {
            genai::Error::WebModelCall { webc_error, .. }
            | genai::Error::WebAdapterCall { webc_error, .. } => web(webc_error),
            genai::Error::HttpError { status, body, .. } => ModelError::Status {
                status: status.as_u16(),
                body: excerpt(body.as_bytes()),
            },
            genai::Error::ChatResponseGeneration { cause, .. } => ModelError::Malformed {
                message: format!("the answer is not a completion: {cause}"),
            },
            genai::Error::InvalidJsonResponseElement { info } => ModelError::Malformed {
                message: info.to_owned(),
            },
            genai::Error::NoChatResponse { .. } => ModelError::Malformed {
                message: "the body holds no answer".to_owned(),
            },
            genai::Error::SerdeJson(e) => ModelError::Malformed {
                message: format!("the body does not fit: {e}"),
            },
            genai::Error::JsonValueExt(e) => ModelError::Malformed {
                message: format!("the body does not fit: {e}"),
            },
            genai::Error::ChatResponse { body, .. } => ModelError::Failed {
                message: excerpt(body.to_string().as_bytes()),
            },
            other => ModelError::Failed {
                message: other.to_string(),
            },
        }
    }
}

/// A part's image or file as genai's [`Binary`] (`None` for text).
fn binary(part: &tackle_core::content::ContentPart) -> Option<Binary> {
    let name = match part {
        tackle_core::content::ContentPart::File { name, .. } => name.clone(),
        _ => None,
    };
    Some(Binary::from_base64(part.mime_type(), part.data()?, name))
}

/// The tool results of one turn, as they gather: they go to the model together.
///
/// Their images and files go in each provider's form: for Anthropic, inside each
/// `tool_result` block (image and document blocks beside the text); for Gemini, as
/// `inline_data` parts in the same user turn as the `functionResponse` parts.
#[derive(Default)]
struct ToolTurn {
    results: Vec<ContentPart>,
    attached: Vec<Binary>,
}

impl ToolTurn {
    fn add(&mut self, provider: GenAiProvider, message: &Message, names: &HashMap<&str, &str>) {
        let call_id = message.tool_call_id.clone().unwrap_or_default();
        let has_attachments = message.parts.iter().any(|p| p.is_attachment());
        if has_attachments && provider == GenAiProvider::Anthropic {
            let (taken, unsent) = provider.split_parts(&message.parts);
            let text = text_fallback(&message.content, &unsent);
            let mut content = vec![json!({"type": "text", "text": text})];
            for part in taken {
                let source = |data: &str| json!({"type": "base64", "media_type": part.mime_type(), "data": data});
                match part {
                    tackle_core::content::ContentPart::Text { text } => {
                        content.push(json!({"type": "text", "text": text}));
                    }
                    tackle_core::content::ContentPart::Image { data, .. } => {
                        content.push(json!({"type": "image", "source": source(data)}));
                    }
                    tackle_core::content::ContentPart::File { data, .. } => {
                        content.push(json!({"type": "document", "source": source(data)}));
                    }
                }
            }
            self.results.push(ContentPart::Custom(CustomPart {
                model_iden: None,
                data: json!({"type": "tool_result", "tool_use_id": call_id, "content": content}),
            }));
            return;
        }
        self.results.push(ContentPart::ToolResponse(ToolResponse {
            fn_name: names.get(call_id.as_str()).map(|n| (*n).to_owned()),
            call_id,
            content: message.content.clone(),
        }));
        self.attached
            .extend(message.parts.iter().filter_map(binary));
    }

    fn flush(&mut self, messages: &mut Vec<ChatMessage>) {
        if self.results.is_empty() {
            return;
        }
        let mut results = std::mem::take(&mut self.results);
        let attached = std::mem::take(&mut self.attached);
        if attached.is_empty() {
            messages.push(ChatMessage::tool(MessageContent::from_parts(results)));
        } else {
            // Gemini: the images in the user turn of the responses.
            results.extend(attached.into_iter().map(ContentPart::Binary));
            messages.push(ChatMessage::user(MessageContent::from_parts(results)));
        }
    }
}

/// An assistant turn: its text, then its tool calls (whose names are remembered for
/// the results that answer them).
fn assistant<'m>(message: &'m Message, names: &mut HashMap<&'m str, &'m str>) -> ChatMessage {
    if message.tool_calls.is_empty() {
        return ChatMessage::assistant(message.content.clone());
    }
    let mut parts: Vec<ContentPart> = Vec::with_capacity(message.tool_calls.len() + 1);
    if !message.content.is_empty() {
        parts.push(ContentPart::Text(message.content.clone()));
    }
    for call in &message.tool_calls {
        names.insert(call.id.as_str(), call.name.as_str());
        parts.push(ContentPart::ToolCall(ToolCall {
            call_id: call.id.clone(),
            fn_name: call.name.clone(),
            // Anthropic and Gemini want an object: unreadable arguments (kept raw) go
            // back empty; the tool's result says why the call did not run.
            fn_arguments: match &call.arguments {
                Value::String(_) => Value::Object(serde_json::Map::new()),
                other => other.clone(),
            },
            thought_signatures: None,
        }));
    }
    ChatMessage::assistant(MessageContent::from_parts(parts))
}

/// The client for one provider at one base URL.
fn client(
    provider: GenAiProvider,
    base_url: &str,
    api_key: &str,
    timeout: Duration,
) -> Result<Client, ModelError> {
    Client::builder()
        .with_adapter_kind(provider.adapter())
        .append_provider_config(
            provider.adapter(),
            (
                Endpoint::from_owned(base_url.to_owned()),
                AuthData::from_single(api_key.to_owned()),
            ),
        )
        .with_web_config(
            WebConfig::default()
                .with_timeout(timeout)
                .with_connect_timeout(timeout),
        )
        .build()
        .map_err(|e| ModelError::Transport {
            message: format!("the client could not be built: {e}"),
        })
}

impl ChatModel for GenAiModel {
    fn provider(&self) -> &str {
        self.provider.as_str()
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(self.ask(request))
    }

    fn structured_output(&self) -> bool {
        true
    }
}
