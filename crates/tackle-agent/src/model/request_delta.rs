//! How a journaled run records a model request: as a delta against the run's last
//! request ([`recorded_request`]), told by a [`Conversation`] how much of it was sent
//! before, and the whole requests made again from the deltas ([`expand_requests`]).

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::hash::BuildHasher as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::Serialize;
use serde_json::{json, Map, Value};
use tackle_core::canonical::{canonical_hash, Fnv};
use tackle_core::replay::{Cassette, Interaction, InteractionKind};
use tackle_core::run::Run;

use super::{ChatRequest, Message, ToolDefinition};

/// A conversation that only grows between its model calls (the ReAct loop's: it
/// appends, and changes nothing it sent): its calls tell a journaled run how much of
/// each request it sent before, so the request is journaled as what it added
/// without comparing the rest again (see `recorded_request`).
pub(crate) struct Conversation {
    id: u64,
    /// Messages at the latest call (`usize::MAX` before the first).
    asked: AtomicUsize,
    /// Messages at the call before it.
    previous: AtomicUsize,
}

impl Conversation {
    /// A new conversation, with an id of its own.
    pub(crate) fn new() -> Conversation {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Conversation {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            asked: AtomicUsize::new(usize::MAX),
            previous: AtomicUsize::new(usize::MAX),
        }
    }

    /// Notes a call with `messages` messages.
    pub(crate) fn asking(&self, messages: usize) {
        let before = self.asked.swap(messages, Ordering::Relaxed);
        self.previous.store(before, Ordering::Relaxed);
    }

    /// Its id, and how many messages it had at its previous call (unchanged since).
    fn unchanged(&self) -> Option<(u64, usize)> {
        let before = self.previous.load(Ordering::Relaxed);
        (before != usize::MAX).then_some((self.id, before))
    }
}

/// What a run keeps of its model requests ([`Run::extension`]): the last one it
/// recorded, with the cassette it went to.
#[derive(Default)]
struct RequestMemory(Mutex<Option<(Cassette, LastRequest)>>);

/// A run's last recorded model request: what its next one is recorded against.
#[derive(Default)]
struct LastRequest {
    /// How many messages it had.
    messages: usize,
    /// The hash of those messages (see [`messages_hash`]; `None`: none yet): what a
    /// request that extends it must begin with. A hash, not a copy, so a recording run
    /// keeps no second conversation.
    prefix: Option<DefaultHasher>,
    /// The hash of its tools (see [`tools_hash`]).
    tools: u64,
    /// Its tools themselves, shared (not a copy): a request offering the very same
    /// list (a run's requests share the skill's until it finds a tool) needs no hash.
    offered: Option<Arc<Vec<ToolDefinition>>>,
    response_schema: Option<Value>,
    /// The digest of the request, chained over its deltas.
    digest: u64,
    started: bool,
    /// The conversation it came from (`u64::MAX`: unknown).
    conversation: u64,
    /// Whether the run records whole requests (its cassette or journal began before
    /// deltas).
    whole: bool,
}

/// Feeds what is serialized into it to a hasher: a hash of typed values without
/// building them as JSON.
///
/// The hashes that decide whether a request extends the last one (its messages, its
/// tools) are only compared within this process, so they are keyed at random per
/// process (SipHash): content a model or a tool wrote cannot be crafted to pass for
/// other content, as it could against a fixed hash. (The recorded digest is FNV, as
/// recordings made before say, and decides nothing.)
struct Hashing(DefaultHasher);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(&mut self.0, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Hashing {
    /// Hashes `value` as serialized. Writing to a hasher cannot fail; a value that
    /// cannot be serialized hashes as far as it got, and so differs from any that can.
    fn feed(&mut self, value: &impl Serialize) {
        let _ = serde_json::to_writer(&mut *self, value);
    }
}

/// A hasher with this process's random keys.
fn keyed() -> DefaultHasher {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new).build_hasher()
}

/// `tools` as JSON, as serialized, with each schema cloned rather than serialized
/// again key by key.
fn tools_value(tools: &[ToolDefinition]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                let mut fields = Map::with_capacity(3);
                fields.insert("name".into(), Value::String(tool.name.clone()));
                fields.insert(
                    "description".into(),
                    Value::String(tool.description.clone()),
                );
                fields.insert("parameters".into(), tool.parameters.clone());
                Value::Object(fields)
            })
            .collect(),
    )
}

/// A hash of `tools` as serialized: equal tools hash equal (within one process), and
/// nothing is built to compare them.
fn tools_hash(tools: &[ToolDefinition]) -> u64 {
    let mut hashing = Hashing(keyed());
    hashing.feed(&tools);
    std::hash::Hasher::finish(&hashing.0)
}

/// The hash state after `messages`, one after another (each a self-delimiting JSON
/// object), from `state` (`None`: from the start).
fn messages_hash(state: Option<DefaultHasher>, messages: &[Message]) -> DefaultHasher {
    let mut hashing = Hashing(state.unwrap_or_else(keyed));
    for message in messages {
        hashing.feed(message);
    }
    hashing.0
}

/// The input of a model call in a run with a cassette or a journal: the request as a
/// delta against the run's previous model request, so the recording holds each
/// message and the tools' schemas once (a run's recording grows with its length, not
/// its square), a durable run resumes in time linear in its length, and a recording
/// run builds a small value per call instead of the whole conversation.
///
/// `{"digest", "extends", "messages", "tools"?, "response_schema"?}`: the first
/// `extends` messages are the previous request's (checked equal), `messages` the
/// rest; `tools` and `response_schema` appear when they differ from the previous
/// request's (always on the first). `digest` (hex) is chained over the deltas from
/// the run's first request, so it names the whole request. A replay makes the same
/// deltas, so calls match as before; [`expand_requests`] makes whole requests again
/// (an exported journal holds those). A cassette recorded with whole requests goes on
/// with whole requests.
///
/// The run keeps its last request with its memory ([`Run::extension`]), for the
/// cassette it went to (a run given another cassette starts again). When the request
/// comes from a [`Conversation`] whose previous call was the last request, the
/// prefix is not compared again.
pub(super) fn recorded_request(
    run: &Run,
    cassette: &Cassette,
    request: &ChatRequest,
    conversation: Option<&Conversation>,
) -> Result<Value, serde_json::Error> {
    let whole = || serde_json::to_value(request);
    let memory = run.extension::<RequestMemory>();
    let unchanged = conversation.and_then(Conversation::unchanged);
    let mut slot = memory.0.lock().unwrap_or_else(PoisonError::into_inner);
    if !slot.as_ref().is_some_and(|(of, _)| of.is(cassette)) {
        let last = LastRequest {
            whole: cassette.any_recorded(is_whole_request),
            ..LastRequest::default()
        };
        *slot = Some((cassette.clone(), last));
    }
    let Some((_, last)) = slot.as_mut() else {
        return whole();
    };
    if last.whole {
        // A run recorded before requests went as deltas goes on as it began.
        return whole();
    }
    let kept = last.messages;
    let extends = last.started
        && request.messages.len() >= kept
        && (unchanged == Some((last.conversation, kept))
            || last.prefix.as_ref().is_some_and(|prefix| {
                std::hash::Hasher::finish(&messages_hash(None, &request.messages[..kept]))
                    == std::hash::Hasher::finish(prefix)
            }));
    let shared = if extends { kept } else { 0 };
    let new = &request.messages[shared..];
    let mut input = Map::new();
    input.insert("extends".into(), json!(shared));
    // Made before the run's memory of its last request changes: a request that
    // cannot be serialized leaves it as it was.
    input.insert("messages".into(), serde_json::to_value(new)?);
    // The very list the last request offered: nothing to hash.
    let same_tools = last.started
        && last
            .offered
            .as_ref()
            .is_some_and(|offered| Arc::ptr_eq(offered, &request.tools));
    if !same_tools {
        let tools = tools_hash(&request.tools);
        if !last.started || tools != last.tools {
            input.insert("tools".into(), tools_value(&request.tools));
            last.tools = tools;
        }
    }
    if !last.started || request.response_schema != last.response_schema {
        input.insert(
            "response_schema".into(),
            request.response_schema.clone().unwrap_or(Value::Null),
        );
        last.response_schema.clone_from(&request.response_schema);
    }
    if !extends {
        last.messages = 0;
        last.prefix = None;
        last.digest = 0;
    }
    last.messages += new.len();
    last.prefix = Some(messages_hash(last.prefix.take(), new));
    let mut input = Value::Object(input);
    let mut hasher = Fnv::default();
    std::hash::Hasher::write_u64(&mut hasher, last.digest);
    canonical_hash(&input, &mut hasher);
    last.digest = std::hash::Hasher::finish(&hasher);
    last.started = true;
    last.offered = Some(Arc::clone(&request.tools));
    last.conversation = unchanged.map_or(u64::MAX, |(id, _)| id);
    if let Value::Object(fields) = &mut input {
        fields.insert("digest".into(), json!(format!("{:016x}", last.digest)));
    }
    Ok(input)
}

/// Whether `interaction` is a model request recorded whole (before requests were
/// recorded as deltas): a run over a cassette holding one goes on the same way, to
/// match.
fn is_whole_request(interaction: &Interaction) -> bool {
    interaction.kind == InteractionKind::Operation
        && interaction.key.starts_with(super::COMPLETION_PREFIX)
        && interaction.input.get("digest").is_none()
}

/// Makes the whole requests of model calls journaled as deltas again (see
/// `recorded_request`), in the order the calls were made: what a cassette that
/// replays the run in an ordinary (not journaled) run holds. Other inputs are left
/// as they are.
pub(crate) fn expand_requests<'a>(inputs: impl Iterator<Item = &'a mut Value>) {
    let mut last = ChatRequest::default();
    for input in inputs {
        let Some(delta) = input.as_object() else {
            continue;
        };
        let (Some(extends), Some(messages), true) = (
            delta.get("extends").and_then(Value::as_u64),
            delta.get("messages"),
            delta.contains_key("digest"),
        ) else {
            continue;
        };
        let Ok(messages) = serde_json::from_value::<Vec<Message>>(messages.clone()) else {
            continue;
        };
        let keep = usize::try_from(extends).unwrap_or(usize::MAX);
        if keep > last.messages.len() {
            continue;
        }
        last.messages.truncate(keep);
        last.messages.extend(messages);
        if let Some(tools) = delta.get("tools") {
            last.tools = serde_json::from_value(tools.clone()).unwrap_or_default();
        }
        if let Some(schema) = delta.get("response_schema") {
            last.response_schema = (!schema.is_null()).then(|| schema.clone());
        }
        if let Ok(whole) = serde_json::to_value(&last) {
            *input = whole;
        }
    }
}
