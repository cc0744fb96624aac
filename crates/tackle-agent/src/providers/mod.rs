//! Tool definitions in each provider's form, derived from the one canonical schema.
//!
//! A tool has one input schema (JSON Schema 2020-12, see [`tackle_core::schema`]). Each
//! model provider accepts a different dialect, so the form is derived at run time:
//!
//! * **OpenAI** (strict function calling, [`openai_form`]): every object gets
//!   `additionalProperties: false` and lists *every* property as required; a property
//!   that was optional becomes nullable instead; `oneOf` becomes `anyOf`. [`drop_nulls`]
//!   removes those nulls from the model's arguments (at any depth, in arrays too)
//!   before they reach the door, so the tool sees an absent field, as its schema says.
//!   A tool whose schema strict mode cannot express (a map, a `serde_json::Value`, a
//!   tuple, a union at the root: [`strict_blocker`]) is sent whole with strict mode
//!   off, as pydantic-ai does; a client that does not ask for strict mode sends every
//!   tool so ([`openai_non_strict`]).
//! * **Anthropic** ([`anthropic`]): the schema as it is (`input_schema`), without
//!   `$schema`; a union at the root becomes one object (Anthropic takes no `anyOf`
//!   there).
//! * **Gemini** ([`gemini_parameters`]): its OpenAPI subset in `parameters` ([`gemini`]:
//!   `$ref`s inlined, type lists as `nullable`, `oneOf` as `anyOf`, keywords Gemini
//!   rejects dropped) when that says what the schema says; else the JSON Schema in
//!   `parametersJsonSchema` ([`gemini_json_schema`]): maps, recursive types, values of
//!   any type. A tool without parameters has neither.
//! * **MCP**: the schema as it is (`inputSchema`).
//!
//! Names differ too: [`ProviderNames`] maps registry keys to each provider's legal
//! names, keeps the reverse map, and refuses two keys that would share a name or a
//! name longer than the provider accepts. It never gives a chat provider's tool one
//! of the [`RESERVED_NAMES`], which client libraries turn into the provider's own
//! built-in tools (`web_search`, `googleSearch`...): such a tool gets its version
//! added (`web_search_v1`).
//!
//! The clients of the providers' chat APIs are modules here, each behind its cargo
//! feature: `openai` (OpenAI-compatible chat completions, feature `openai`), `genai`
//! (Anthropic Messages, Gemini and the OpenAI Responses API, features `anthropic`,
//! `gemini` and `openai-responses`) and `ollama` (Ollama's native chat API, feature
//! `ollama`). Each sends a tool as [`definition_of`] gives it for its provider, as it
//! is: the OpenAI form (the chat completions with strict mode on, the Responses API
//! with the function's fields one level up), the Anthropic form, the Gemini form; with
//! strict mode off (OpenAI-compatible chat completions by default, Ollama), the OpenAI
//! form of [`openai_non_strict`].

// The module's files: this file the `Provider`s; `forms.rs` each provider's form of a
// tool's definition and schema; `names.rs` the tools' names (`ProviderNames`);
// `wire.rs` the HTTP the clients share, `responses.rs` the Responses API's body.
mod forms;
mod gemini_forms;
#[cfg(any(
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
pub mod genai;
mod names;
#[cfg(feature = "ollama")]
pub mod ollama;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai-responses")]
mod responses;
mod walk;
#[cfg(any(
    feature = "openai",
    feature = "ollama",
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
mod wire;

use serde::{Deserialize, Serialize};

pub use forms::{
    anthropic, definition, definition_of, drop_nulls, openai_definition, openai_form,
    openai_non_strict, openai_strict, strict_blocker, OpenAiForm,
};
pub use gemini_forms::{gemini, gemini_json_schema, gemini_parameters, GEMINI_MAX_DEPTH};
pub use names::{NameTaken, ProviderNameError, ProviderNames, RESERVED_NAMES};

/// A model provider's tool-definition dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI chat completions, strict function calling.
    OpenAi,
    /// Anthropic messages.
    Anthropic,
    /// Google Gemini function declarations.
    Gemini,
    /// The Model Context Protocol.
    Mcp,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// The longest tool name the provider accepts.
    pub fn max_name_len(self) -> usize {
        match self {
            Provider::Mcp => 128,
            _ => 64,
        }
    }

    /// The provider's legal form of a tool key's path (`namespace.name`; any
    /// `@version` is left out): characters the provider refuses become `_`.
    pub fn name_for(self, key: &str) -> String {
        let path = key.split_once('@').map_or(key, |(p, _)| p);
        let keep_dots = self == Provider::Mcp;
        path.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || (keep_dots && c == '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}
