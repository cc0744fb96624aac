//! Multi round-trip requests: how a served call asks its client for input under MCP's
//! 2026-07-28 revision (SEP-2322).
//!
//! From that revision on a server sends no requests of its own. A tool that needs the
//! client (an elicitation, an approval, the client's model, its roots) asks through
//! [`Client`](crate::client::Client) as before; when the request came from a client of
//! the new revision, the question is not sent: it is noted under a key, the tool's
//! call ends, and the server answers the request with an `InputRequiredResult`
//! holding every question the call asked (`inputRequests`) and a `requestState`. The
//! client retries the same request with the answers (`inputResponses`, by key) and the
//! state; the server runs the call again from its start, and each question already
//! answered gets its answer at once. A call may take several rounds; it ends when it
//! asks nothing new.
//!
//! The server keeps nothing between rounds, so any instance that shares the key can
//! serve the retry. The `requestState` carries the answers of earlier rounds and the
//! keys asked; it is sealed (HMAC-SHA256, rmcp's `RequestStateCodec`) with the
//! server's key and bound to the request (method, name, arguments, and the client as
//! the HTTP front knows it), and it expires after
//! [`ELICITATION_TIMEOUT`](crate::client::ELICITATION_TIMEOUT). A state that does not
//! open (forged, altered, of another request, expired) fails the request with
//! "invalid params", before anything runs; a tool call's is refused by the door
//! (`Run::refuse`: the outcome `InvalidInput`, and its audit event). The state is signed, not encrypted: the
//! client can read the answers it gave.
//!
//! An approval is only taken from a key the server asked in an earlier round (the
//! state says so): a client cannot approve a call before it was shown the form.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::model::{InputRequests, InputRequiredResult, RequestStateCodec, SealOptions};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a `requestState` holds, sealed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Sealed {
    /// The answers given in earlier rounds, by key.
    answers: BTreeMap<String, Value>,
    /// The keys asked in the round this state ended.
    asked: BTreeSet<String>,
}

/// The input rounds of one request of the 2026-07-28 revision: the answers it came
/// with, and the questions its call asks (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Rounds {
    /// What the request binds its state to.
    binding: Vec<u8>,
    /// Every answer the request carries: the state's, then its `inputResponses`.
    answers: BTreeMap<String, Value>,
    /// The keys asked in the round before (from the state).
    asked_before: BTreeSet<String>,
    /// What this round noted.
    round: Mutex<Round>,
}

/// What one run of the call did with its client.
#[derive(Debug, Default)]
struct Round {
    /// The answers the call read (they go on in the next state).
    used: BTreeMap<String, Value>,
    /// The questions it asked that have no answer yet, by key.
    asked: BTreeMap<String, Value>,
    /// How many keys of each kind it made (`elicitation-1`, ...).
    made: BTreeMap<&'static str, usize>,
    /// A capability it needed that the client did not declare.
    refused: Option<&'static str>,
}

/// The binding of a request's state: its method, its name, its arguments and its
/// client.
pub(crate) fn binding(method: &str, name: &str, arguments: &Value, owner: Option<&str>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(64);
    for part in [method, name, owner.unwrap_or("")] {
        bytes.extend_from_slice(part.as_bytes());
        bytes.push(0);
    }
    bytes.extend_from_slice(arguments.to_string().as_bytes());
    bytes
}

/// The refusal of a state that does not open.
fn tampered(why: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(
        format!("the requestState is not one this server gave for this request ({why})"),
        None,
    )
}

impl Rounds {
    /// The rounds of a request bound to `binding`, with its `state` and `responses`.
    /// A state that does not open with `codec` is refused.
    pub(crate) fn open(
        codec: &RequestStateCodec,
        binding: Vec<u8>,
        state: Option<&str>,
        responses: Option<BTreeMap<String, Value>>,
    ) -> Result<Rounds, ErrorData> {
        let sealed: Sealed = match state {
            Some(state) => codec.open_json_with(state, &binding).map_err(tampered)?,
            None => Sealed::default(),
        };
        let mut answers = sealed.answers;
        // An answer of `null` is no answer.
        answers.extend(
            responses
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, v)| !v.is_null()),
        );
        Ok(Rounds {
            binding,
            answers,
            asked_before: sealed.asked,
            round: Mutex::new(Round::default()),
        })
    }

    fn round(&self) -> MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new key of `kind` for this run of the call: `kind-1`, `kind-2`, ... in the
    /// order the call asks (the same in every round of a call that asks in a fixed
    /// order).
    pub(crate) fn key(&self, kind: &'static str) -> String {
        let mut round = self.round();
        let made = round.made.entry(kind).or_insert(0);
        *made += 1;
        format!("{kind}-{made}")
    }

    /// The answer to `key`, if the request carries one. A `bound` answer (an approval)
    /// counts only when the server asked `key` in the round before.
    pub(crate) fn answer(&self, key: &str, bound: bool) -> Option<Value> {
        if bound && !self.asked_before.contains(key) {
            return None;
        }
        let answer = self.answers.get(key)?.clone();
        self.round().used.insert(key.to_owned(), answer.clone());
        Some(answer)
    }

    /// Every answer the request carries, and the keys the server asked in the round
    /// before (a task made by the request keeps them: see [`crate::task_input`]).
    pub(crate) fn carried(&self) -> (BTreeMap<String, Value>, BTreeSet<String>) {
        (self.answers.clone(), self.asked_before.clone())
    }

    /// Notes the question `request` (`{"method", "params"}`) under `key`.
    pub(crate) fn ask(&self, key: &str, request: Value) {
        let mut round = self.round();
        round.used.remove(key);
        round.asked.insert(key.to_owned(), request);
    }

    /// Notes that the call needed `capability`, which the client did not declare.
    pub(crate) fn refuse(&self, capability: &'static str) {
        self.round().refused.get_or_insert(capability);
    }

    /// The capability the call needed and the client did not declare, if any.
    pub(crate) fn refused(&self) -> Option<&'static str> {
        self.round().refused
    }

    /// The answer of a call that asked something: its questions and the sealed state
    /// the retry must bring, good for `ttl`. `None` when it asked nothing.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        ttl: std::time::Duration,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        let round = self.round();
        if round.asked.is_empty() {
            return Ok(None);
        }
        let requests: InputRequests = round
            .asked
            .iter()
            .map(|(key, request)| {
                serde_json::from_value(request.clone())
                    .map(|request| (key.clone(), request))
                    .map_err(|e| {
                        ErrorData::internal_error(format!("the input request `{key}`: {e}"), None)
                    })
            })
            .collect::<Result<_, _>>()?;
        let sealed = Sealed {
            answers: round.used.clone(),
            asked: round.asked.keys().cloned().collect(),
        };
        let state = codec
            .seal_json_with(
                &sealed,
                &SealOptions::new().associated_data(&self.binding).ttl(ttl),
            )
            .map_err(|e| ErrorData::internal_error(format!("the request state: {e}"), None))?;
        Ok(Some(InputRequiredResult::new(Some(requests), Some(state))))
    }
}
