//! Prompts: message templates a server offers for a client to fill in and use.
//!
//! A prompt is a named, described list of messages, rendered from the arguments a
//! client gives (`prompts/get`): a slash command in a chat client, a skill's
//! instructions. A program publishes prompts with a [`Prompts`] set of [`Prompt`]s.
//! A message's content is text, an image, or an embedded resource ([`PromptContent`]).
//!
//! A tackle [`Skill`] is served as a prompt with [`Prompt::from_skill`]: its system
//! prompt, its examples and the tools it declares become the prompt's messages, so a
//! client's user can start the same work the skill does.
//!
//! A prompt that needs its client to render (a form, the client's model, its roots) is
//! made with [`Prompt::asking`]: its rendering is async and reaches the client with
//! [`Client::current`](crate::client::Client::current), and a client of the 2026-07-28
//! revision is asked in rounds, as a tool's client is ([`crate::rounds`]).
//!
//! Arguments are checked before rendering: a required argument that is missing, or
//! one the prompt does not declare, is refused with a message that names it.
//! Completion of an argument's value (`completion/complete`) comes from
//! [`Prompt::with_completion`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{json, Value};
use tackle_agent::skill::Skill;

use crate::resources::{Completer, ResourceBody};
use crate::McpError;

/// Who says a prompt message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// What a prompt message holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptContent {
    /// Text.
    Text(String),
    /// An image, as bytes and a MIME type.
    Image {
        /// `image/png`, ...
        mime_type: String,
        /// The image's bytes.
        bytes: Vec<u8>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        mime_type: String,
        /// Its contents.
        body: ResourceBody,
    },
}

/// One message of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What it says.
    pub content: PromptContent,
}

impl PromptMessage {
    /// A user's text message.
    pub fn user(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: PromptRole::User,
            content: PromptContent::Text(text.into()),
        }
    }

    /// An assistant's text message.
    pub fn assistant(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: PromptRole::Assistant,
            content: PromptContent::Text(text.into()),
        }
    }

    /// A user's message holding `content`.
    pub fn user_content(content: PromptContent) -> PromptMessage {
        PromptMessage {
            role: PromptRole::User,
            content,
        }
    }

    /// The message in MCP's form.
    pub(crate) fn to_wire(&self) -> Value {
        use base64::Engine as _;
        let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let role = match self.role {
            PromptRole::User => "user",
            PromptRole::Assistant => "assistant",
        };
        let content = match &self.content {
            PromptContent::Text(text) => json!({"type": "text", "text": text}),
            PromptContent::Image { mime_type, bytes } => {
                json!({"type": "image", "mimeType": mime_type, "data": encode(bytes)})
            }
            PromptContent::Resource {
                uri,
                mime_type,
                body,
            } => {
                let resource = match body {
                    ResourceBody::Text(text) => {
                        json!({"uri": uri, "mimeType": mime_type, "text": text})
                    }
                    ResourceBody::Binary(bytes) => {
                        json!({"uri": uri, "mimeType": mime_type, "blob": encode(bytes)})
                    }
                };
                json!({"type": "resource", "resource": resource})
            }
        };
        json!({"role": role, "content": content})
    }
}

/// A prompt's arguments as a client gave them, by name.
pub type PromptArguments = BTreeMap<String, String>;

/// Renders a prompt from its arguments, or says why it cannot.
pub type Renderer =
    Arc<dyn Fn(&PromptArguments) -> Result<Vec<PromptMessage>, String> + Send + Sync>;

/// The rendering of a prompt made with [`Prompt::asking`]: its messages, or why there
/// are none.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<Vec<PromptMessage>, String>> + Send>>;

/// Renders an asking prompt from its arguments.
type AskingRenderer = Arc<dyn Fn(PromptArguments) -> PromptFuture + Send + Sync>;

/// One argument a prompt takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// One prompt, as a builder; add it to a [`Prompts`] set.
#[derive(Clone)]
pub struct Prompt {
    name: String,
    title: Option<String>,
    description: String,
    arguments: Vec<PromptArgument>,
    completions: BTreeMap<String, Completer>,
    requires: Vec<String>,
    /// A skill's tools (keys): the server names those the client may call after the
    /// task, by the names it serves them under.
    tools: Vec<String>,
    render: Renderer,
    /// The async renderer of a prompt that asks its client.
    asks: Option<AskingRenderer>,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt named `name`, described by `description`, that `render` renders.
    pub fn new(
        name: &str,
        description: impl Into<String>,
        render: impl Fn(&PromptArguments) -> Result<Vec<PromptMessage>, String> + Send + Sync + 'static,
    ) -> Prompt {
        Prompt {
            name: name.to_owned(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            completions: BTreeMap::new(),
            requires: Vec::new(),
            tools: Vec::new(),
            render: Arc::new(render),
            asks: None,
        }
    }

    /// A prompt named `name` whose rendering asks its client: `render` runs while the
    /// server answers `prompts/get`, where
    /// [`Client::current`](crate::client::Client::current) is the requesting client
    /// (its forms, model and roots). To a client of the 2026-07-28 revision each
    /// question goes in an input request and `render` runs again with the answers, so
    /// it passes [`ClientError::InputRequired`](crate::client::ClientError::InputRequired)
    /// on (as an `Err`). [`Prompt::render`] cannot render it (it has no client).
    pub fn asking<F, Fut>(name: &str, description: impl Into<String>, render: F) -> Prompt
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, String>> + Send + 'static,
    {
        let label = name.to_owned();
        let mut prompt = Prompt::new(name, description, move |_| {
            Err(format!(
                "the prompt `{label}` asks its client: it renders only when served (`prompts/get`)"
            ))
        });
        prompt.asks = Some(Arc::new(move |arguments| Box::pin(render(arguments))));
        prompt
    }

    /// The rendering of an asking prompt from `arguments` (checked first); `None` for
    /// one that renders at once ([`Prompt::render`]).
    pub(crate) fn asking_render(
        &self,
        arguments: &PromptArguments,
    ) -> Option<Result<PromptFuture, String>> {
        let asks = self.asks.as_ref()?;
        Some(self.check(arguments).map(|()| asks(arguments.clone())))
    }

    /// A skill as a prompt named after it (`<name>`): its system prompt as the first
    /// message, then each example as a user's input and, where it has one, the
    /// expected output as the assistant's answer, then the task, from the required
    /// argument `task`. A server adds a note of the skill's tools that the client may
    /// call, by the names it serves them under; the skill's `requires` are the
    /// prompt's.
    pub fn from_skill(skill: &Skill) -> Prompt {
        let mut lead = vec![PromptMessage::user(skill.system_prompt())];
        for example in skill.examples() {
            lead.push(PromptMessage::user(
                Value::Object(example.inputs.clone()).to_string(),
            ));
            if let Some(output) = &example.expected_output {
                lead.push(PromptMessage::assistant(
                    Value::Object(output.clone()).to_string(),
                ));
            }
        }
        let mut prompt = Prompt::new(skill.name(), skill.description(), move |args| {
            let mut messages = lead.clone();
            messages.push(PromptMessage::user(
                args.get("task").cloned().unwrap_or_default(),
            ));
            Ok(messages)
        })
        .with_argument("task", "The task to do.", true)
        .requiring(skill.requires());
        prompt.tools = skill.tools().to_vec();
        prompt
    }

    /// The keys of the tools a skill's prompt names (by the names the client sees).
    pub(crate) fn tools(&self) -> &[String] {
        &self.tools
    }

    /// A capability a client needs to see and get it (a skill's `requires`).
    pub fn requires(mut self, capability: impl Into<String>) -> Prompt {
        self.requires.push(capability.into());
        self
    }

    fn requiring(mut self, capabilities: &[String]) -> Prompt {
        self.requires.extend(capabilities.iter().cloned());
        self
    }

    /// A human-readable title.
    pub fn with_title(mut self, title: impl Into<String>) -> Prompt {
        self.title = Some(title.into());
        self
    }

    /// Declares an argument.
    pub fn with_argument(mut self, name: &str, description: &str, required: bool) -> Prompt {
        self.arguments.push(PromptArgument {
            name: name.to_owned(),
            description: (!description.is_empty()).then(|| description.to_owned()),
            required,
        });
        self
    }

    /// Completes an argument's value for `completion/complete`.
    pub fn with_completion(
        mut self,
        argument: &str,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Prompt {
        self.completions
            .insert(argument.to_owned(), Arc::new(complete));
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The capabilities a client needs to see and get it.
    pub(crate) fn required(&self) -> &[String] {
        &self.requires
    }

    /// Renders it from `arguments`, checked against its declared arguments.
    pub fn render(&self, arguments: &PromptArguments) -> Result<Vec<PromptMessage>, String> {
        self.check(arguments)?;
        (self.render)(arguments)
    }

    /// Whether `arguments` are the ones it takes: every required one, none unknown.
    fn check(&self, arguments: &PromptArguments) -> Result<(), String> {
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|a| a.required && !arguments.contains_key(&a.name))
        {
            return Err(format!(
                "the prompt `{}` needs the argument `{}`",
                self.name, missing.name
            ));
        }
        if let Some(unknown) = arguments
            .keys()
            .find(|k| !self.arguments.iter().any(|a| &a.name == *k))
        {
            return Err(format!(
                "the prompt `{}` takes no argument `{unknown}`",
                self.name
            ));
        }
        Ok(())
    }

    /// The `prompts/list` entry.
    pub(crate) fn listing(&self) -> Value {
        let arguments: Vec<Value> = self
            .arguments
            .iter()
            .map(|a| {
                let mut arg = json!({"name": a.name, "required": a.required});
                if let Some(description) = &a.description {
                    arg["description"] = json!(description);
                }
                arg
            })
            .collect();
        let mut entry = json!({
            "name": self.name,
            "description": self.description,
            "arguments": arguments,
        });
        if let Some(title) = &self.title {
            entry["title"] = json!(title);
        }
        entry
    }
}

/// A server's prompts. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Prompts {
    prompts: Vec<Prompt>,
}

impl Prompts {
    /// An empty set.
    pub fn new() -> Prompts {
        Prompts::default()
    }

    /// Adds `prompt`. Fails on an empty name or description, a name the set has
    /// already, an argument declared twice, or a completion for no argument.
    pub fn with(mut self, prompt: Prompt) -> Result<Prompts, McpError> {
        let fail = |message: &str| McpError::Prompt {
            name: prompt.name.clone(),
            message: message.to_owned(),
        };
        if prompt.name.trim().is_empty() {
            return Err(fail("a prompt needs a name"));
        }
        if prompt.description.trim().is_empty() {
            return Err(fail("a prompt needs a description (clients show it)"));
        }
        if self.prompts.iter().any(|p| p.name == prompt.name) {
            return Err(fail("the set has a prompt with this name already"));
        }
        for (i, argument) in prompt.arguments.iter().enumerate() {
            if prompt.arguments[..i]
                .iter()
                .any(|a| a.name == argument.name)
            {
                return Err(fail("an argument is declared twice"));
            }
        }
        if prompt
            .completions
            .keys()
            .any(|k| !prompt.arguments.iter().any(|a| &a.name == k))
        {
            return Err(fail(
                "a completion is given for an argument it does not take",
            ));
        }
        self.prompts.push(prompt);
        Ok(self)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// The prompts, in the order added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.iter()
    }

    /// The prompt named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|p| p.name == name)
    }

    /// The completions of `argument` of the prompt `name`, from `value`: `None` when
    /// no prompt that `visible` lets through has that name; a completer that panics
    /// gives `Some(Err)`.
    pub(crate) fn complete(
        &self,
        name: &str,
        argument: &str,
        value: &str,
        visible: impl Fn(&Prompt) -> bool,
    ) -> Option<Result<Vec<String>, String>> {
        let prompt = self.get(name).filter(|p| visible(p))?;
        Some(match prompt.completions.get(argument) {
            Some(complete) => crate::resources::guarded(|| complete(value)),
            None => Ok(Vec::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_before_rendering() {
        let prompt = Prompt::new("p", "A prompt.", |args| {
            Ok(vec![PromptMessage::user(format!("{args:?}"))])
        })
        .with_argument("a", "", true)
        .with_argument("b", "", false);
        let mut args = PromptArguments::new();
        assert!(prompt.render(&args).unwrap_err().contains("`a`"));
        args.insert("a".into(), "1".into());
        assert!(prompt.render(&args).is_ok());
        args.insert("c".into(), "1".into());
        assert!(prompt.render(&args).unwrap_err().contains("`c`"));
    }

    #[test]
    fn a_set_refuses_what_clients_cannot_use() {
        let quiet = Prompt::new("p", "", |_| Ok(Vec::new()));
        assert!(Prompts::new().with(quiet).is_err());
        let set = Prompts::new()
            .with(Prompt::new("p", "One.", |_| Ok(Vec::new())))
            .unwrap();
        assert!(set
            .with(Prompt::new("p", "Two.", |_| Ok(Vec::new())))
            .is_err());
        let stray = Prompt::new("q", "Q.", |_| Ok(Vec::new())).with_completion("x", |_| vec![]);
        assert!(Prompts::new().with(stray).is_err());
    }
}
