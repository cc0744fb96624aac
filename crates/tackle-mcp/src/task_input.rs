//! What a task's call asks its client, and the client's answers (the Tasks extension
//! under MCP's 2026-07-28 revision, SEP-2663): the task's *inbox*.
//!
//! A served call asks its client through [`Client`](crate::client::Client) (an
//! elicitation, an approval, the client's model, its roots). In a plain request of the
//! 2026-07-28 revision the question ends the call and goes back in the request's
//! answer (see [`crate::rounds`]). In a task there is no request to answer: the
//! question is kept in the server's run store, under a key, and the call waits for it.
//! The task shows `input_required` with every question not yet answered
//! (`inputRequests` on `tasks/get`); the client answers some or all of them with
//! `tasks/update` (`inputResponses`, by key), and each waiting question gets its answer
//! and the call goes on. An answer to a key the task did not ask is ignored.
//!
//! The inbox is a record of its own in the run store (`mcp-input-<task id>`), beside
//! the task's run, written with the store's version checks, so any server process
//! that shares the store takes a `tasks/update`: the process that drives the task
//! reads the answer at once when it took the update itself, else within a poll
//! interval. The answers stay: a task resumed after its process died runs its call
//! again, and each question already answered gets its answer at once.
//!
//! An approval is taken only from a key the server asked (a `tasks/update` answers
//! only asked keys, and answers carried into a task by the request that made it count
//! only where that request's state says the server asked them).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::InputRequests;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::durable::{RunRecord, RunStore, StoreError};
use tokio::sync::Notify;

/// The prefix of a task's inbox in the run store.
pub const INPUT_PREFIX: &str = "mcp-input-";

/// How many times a write to the inbox is tried when another writer got there first.
const WRITE_TRIES: usize = 16;

/// The most questions one task keeps waiting at once.
pub(crate) const MAX_PENDING: usize = 64;

/// What the inbox record holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Inbox {
    /// The questions not yet answered, by key (`{"method", "params"}`).
    #[serde(default)]
    asked: BTreeMap<String, Value>,
    /// The answers, by key.
    #[serde(default)]
    answers: BTreeMap<String, Value>,
    /// The keys whose answer came to a question the server asked (an approval is
    /// taken only from one of these).
    #[serde(default)]
    granted: BTreeSet<String>,
}

/// The inbox record's id for task `id`.
fn record_id(id: &str) -> String {
    format!("{INPUT_PREFIX}{id}")
}

fn failed(error: impl std::fmt::Display) -> String {
    format!("the task's questions could not be kept: {error}")
}

/// Reads the inbox of task `id` (empty when it has none).
fn read(store: &dyn RunStore, id: &str) -> Result<Inbox, String> {
    match store.load(&record_id(id)).map_err(failed)? {
        Some(record) => serde_json::from_str(&record.task).map_err(failed),
        None => Ok(Inbox::default()),
    }
}

/// Changes the inbox of task `id` with `change` (made when missing), saved with the
/// store's version check and tried again when another writer saved first.
fn update<R>(
    store: &dyn RunStore,
    id: &str,
    mut change: impl FnMut(&mut Inbox) -> R,
) -> Result<R, String> {
    let run_id = record_id(id);
    for _ in 0..WRITE_TRIES {
        let (mut record, mut inbox) = match store.load(&run_id).map_err(failed)? {
            Some(record) => {
                let inbox = serde_json::from_str(&record.task).map_err(failed)?;
                (Some(record), inbox)
            }
            None => (None, Inbox::default()),
        };
        let out = change(&mut inbox);
        let task = serde_json::to_string(&inbox).map_err(failed)?;
        let saved = match record.as_mut() {
            Some(record) => {
                record.task = task;
                store.save(record, &[])
            }
            None => store.create(&RunRecord::new(run_id.clone(), task)),
        };
        match saved {
            Ok(()) => return Ok(out),
            Err(StoreError::Conflict { .. } | StoreError::Exists { .. }) => continue,
            Err(error) => return Err(failed(error)),
        }
    }
    Err(failed("other writers kept changing it"))
}

/// Seeds the inbox of a new task `id` with the `answers` its request carried; those
/// of `granted` keys were asked by the server.
pub(crate) fn seed(
    store: &dyn RunStore,
    id: &str,
    answers: BTreeMap<String, Value>,
    granted: BTreeSet<String>,
) -> Result<(), String> {
    if answers.is_empty() {
        return Ok(());
    }
    update(store, id, |inbox| {
        inbox.granted.extend(granted.iter().cloned());
        inbox.answers.extend(answers.clone());
    })
}

/// The questions task `id` waits on, as `tasks/get` shows them (empty when none).
pub(crate) fn pending(store: &dyn RunStore, id: &str) -> Result<InputRequests, String> {
    read(store, id)?
        .asked
        .into_iter()
        .map(|(key, request)| {
            serde_json::from_value(request)
                .map(|request| (key.clone(), request))
                .map_err(|e| failed(format!("the question `{key}`: {e}")))
        })
        .collect()
}

/// Delivers a client's `responses` to task `id` (`tasks/update`): each answers the
/// question of its key, if the task asks it; other keys, and answers of `null`, are
/// ignored. How many questions it answered.
pub(crate) fn deliver(
    store: &dyn RunStore,
    id: &str,
    responses: &BTreeMap<String, Value>,
) -> Result<usize, String> {
    update(store, id, |inbox| {
        let mut answered = 0;
        for (key, answer) in responses {
            if answer.is_null() || inbox.asked.remove(key).is_none() {
                continue;
            }
            inbox.answers.insert(key.clone(), answer.clone());
            inbox.granted.insert(key.clone());
            answered += 1;
        }
        answered
    })
}

/// The answer `inbox` holds to `key`, if it may be used (a `bound` one only when the
/// server asked `key`).
fn usable(inbox: &Inbox, key: &str, bound: bool) -> Option<Value> {
    inbox
        .answers
        .get(key)
        .filter(|_| !bound || inbox.granted.contains(key))
        .cloned()
}

/// A task's call asking through its inbox: one per run of the call (its keys are
/// numbered afresh each run, so a call run again asks under the same keys).
pub(crate) struct TaskInbox {
    store: Arc<dyn RunStore>,
    id: String,
    /// Rung when any `tasks/update` reaches this process.
    changed: Arc<Notify>,
    /// How often the store is read again while a question waits (an update taken by
    /// another process).
    poll: Duration,
    /// How long a question waits for its answer.
    patience: Duration,
    /// How many keys of each kind this run of the call made.
    made: Mutex<BTreeMap<&'static str, usize>>,
}

impl std::fmt::Debug for TaskInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskInbox").field("id", &self.id).finish()
    }
}

impl TaskInbox {
    /// The inbox of task `id` in `store`.
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        id: &str,
        changed: Arc<Notify>,
        poll: Duration,
        patience: Duration,
    ) -> TaskInbox {
        TaskInbox {
            store,
            id: id.to_owned(),
            changed,
            poll,
            patience,
            made: Mutex::default(),
        }
    }

    /// A new key of `kind` for this run of the call: `kind-1`, `kind-2`, ...
    pub(crate) fn key(&self, kind: &'static str) -> String {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let count = made.entry(kind).or_insert(0);
        *count += 1;
        format!("{kind}-{count}")
    }

    /// The answer to `question` under `key`: at once when it has one (a `bound`
    /// answer, an approval, only when the server asked `key`), else once the client
    /// answers it. A question left unanswered past the inbox's patience fails, as
    /// one that could not be kept: why.
    pub(crate) async fn ask(
        &self,
        key: &str,
        bound: bool,
        question: Value,
    ) -> Result<Value, String> {
        let store = Arc::clone(&self.store);
        let (id, owned_key) = (self.id.clone(), key.to_owned());
        let asked = tokio::task::spawn_blocking(move || {
            update(&*store, &id, |inbox| {
                if let Some(answer) = usable(inbox, &owned_key, bound) {
                    return Ok(Some(answer));
                }
                if inbox.asked.len() >= MAX_PENDING && !inbox.asked.contains_key(&owned_key) {
                    return Err(format!("the task already waits on {MAX_PENDING} questions"));
                }
                inbox.asked.insert(owned_key.clone(), question.clone());
                Ok(None)
            })
        })
        .await
        .map_err(|e| e.to_string())???;
        if let Some(answer) = asked {
            return Ok(answer);
        }
        let wait = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                let store = Arc::clone(&self.store);
                let id = self.id.clone();
                let inbox = tokio::task::spawn_blocking(move || read(&*store, &id))
                    .await
                    .map_err(|e| e.to_string())??;
                if let Some(answer) = usable(&inbox, key, bound) {
                    return Ok(answer);
                }
                tokio::select! {
                    () = &mut changed => {}
                    () = tokio::time::sleep(self.poll) => {}
                }
            }
        };
        match tokio::time::timeout(self.patience, wait).await {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "the client did not answer `{key}` within {} s",
                self.patience.as_secs()
            )),
        }
    }
}

/// Where the questions of a task's call go while the request that made the task is
/// open (a tool served with
/// [`McpServer::with_questions_first`](crate::McpServer::with_questions_first)): in that
/// request's rounds until the request answers with the task, then to the task's
/// inbox.
///
/// The request waits until the call asks something, ends, or its window passes. A
/// question asked first ends the call ([`ClientError::InputRequired`]) and the
/// request answers with every question the call asked (an `InputRequiredResult`); the
/// client's retry, with the answers, makes the task. Otherwise the request answers
/// with the task, and later questions wait in its inbox.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    moved: Notify,
}

#[derive(Debug, Default)]
struct GateState {
    /// The request answered with the task: questions go to the inbox.
    detached: bool,
    /// The call asked something in the request.
    asked: bool,
    /// The call ended.
    ended: bool,
}

impl Gate {
    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a question goes back in the request's answer (else to the inbox).
    pub(crate) fn ask(&self) -> bool {
        let mut state = self.state();
        if state.detached {
            return false;
        }
        state.asked = true;
        self.moved.notify_waiters();
        true
    }

    /// Notes that the call ended.
    pub(crate) fn end(&self) {
        self.state().ended = true;
        self.moved.notify_waiters();
    }

    /// Whether the call asked in the request (then the task is superseded by the
    /// client's retry).
    pub(crate) fn asked(&self) -> bool {
        self.state().asked
    }

    /// Waits until the request can answer: `true` when the call asked something and
    /// ended (the request answers with the questions), `false` when the task goes on
    /// (the call ended without asking, or `window` passed first).
    /// A request that goes away before it answers lets the task go on.
    pub(crate) async fn settle(&self, window: Duration) -> bool {
        struct Gone<'a>(&'a Gate);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                let mut state = self.0.state();
                if !state.asked {
                    state.detached = true;
                }
            }
        }
        let _gone = Gone(self);
        let deadline = tokio::time::sleep(window);
        tokio::pin!(deadline);
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            {
                let mut state = self.state();
                if state.asked {
                    if state.ended {
                        return true;
                    }
                } else if state.ended {
                    state.detached = true;
                    return false;
                }
            }
            tokio::select! {
                () = &mut moved => {}
                () = &mut deadline, if !self.state().asked => {
                    let mut state = self.state();
                    if !state.asked {
                        state.detached = true;
                        return false;
                    }
                }
            }
        }
    }
}
