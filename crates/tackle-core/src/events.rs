//! Progress and streaming: what running tools tell their caller before they return.
//!
//! A tool calls [`ToolContext::report_progress`](crate::ToolContext::report_progress)
//! or [`ToolContext::stream`](crate::ToolContext::stream); the caller, who put an
//! [`EventSink`] in the run (with
//! [`Run::with_events`](crate::run::Run::with_events)), reads the events
//! from the matching [`EventReceiver`] in the order they happened. The door adds a
//! `Started` and a `Finished` event around every call.
//!
//! The stream ends (the receiver's [`recv`](EventReceiver::recv) returns `None`, once
//! it has read what is queued) when the sink is closed with [`EventSink::close`] or
//! when its last clone is dropped, as happens when the run that holds it is dropped:
//! a program that reads events until `None` never waits for good.
//!
//! The queue is bounded: a caller that reads slowly loses the *oldest* events (and can
//! see how many with [`EventReceiver::dropped`]), while tools never wait on it. What a
//! tool streams is also kept, losslessly, beside the call: a tool that returns `()`
//! gets the concatenation of its chunks as its output, however many events were
//! dropped.
//!
//! Model calls stream too: while a model writes its reply, each piece of it (text, or
//! part of a tool call) reaches the sink as a [`ToolEventKind::Model`] event of the
//! model's call (key `llm.<provider>.complete@<model>`), see
//! `tackle_agent::model::complete` (in the agent crate).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// One thing a running call told its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolEvent {
    /// Position in the queue's whole history, from 0; gaps show dropped events.
    pub seq: u64,
    /// The call's id (as in audit events).
    pub call_id: u64,
    /// The tool's key.
    pub key: String,
    /// What happened.
    pub kind: ToolEventKind,
}

/// What a [`ToolEvent`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolEventKind {
    /// The tool started running.
    Started,
    /// The tool reported progress: `done` units out of `total`, when known.
    Progress {
        /// Units done.
        done: u64,
        /// Units in all, when known.
        total: Option<u64>,
    },
    /// The tool streamed a chunk of its result.
    Chunk(String),
    /// The call finished, successfully or not.
    Finished {
        /// Whether it succeeded.
        ok: bool,
    },
    /// A model call streamed a piece of its reply.
    Model(ModelDelta),
}

/// A piece of a model's reply, as it streams. Concatenating a call's `Text` deltas
/// gives the reply's text; concatenating the `arguments` of the `ToolCall` deltas of
/// one `index` gives that call's arguments, as JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelDelta {
    /// More of the reply's text.
    Text(String),
    /// More of one tool call: its id and name (in the first delta of the call, as
    /// the provider sends them), then pieces of its arguments.
    ToolCall {
        /// The call's position in the reply, from 0.
        index: usize,
        /// The model's id for the call, when this delta carries it.
        id: Option<String>,
        /// The tool's name, when this delta carries it.
        name: Option<String>,
        /// A piece of the arguments' JSON text.
        arguments: String,
    },
}

struct Queue {
    capacity: usize,
    state: Mutex<State>,
    notify: Notify,
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    events: VecDeque<ToolEvent>,
    next_seq: u64,
    closed: bool,
}

/// The sending side of an event queue; cheap to clone. Dropping the last clone ends
/// the stream, as [`close`](EventSink::close) does. See the [module docs](self).
#[derive(Clone)]
pub struct EventSink(Arc<Sender>);

/// What every clone of one sink shares: the queue, closed when the last clone goes.
struct Sender(Arc<Queue>);

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Queue {
    fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        // `notify_one` keeps a permit when the receiver is not waiting yet.
        self.notify.notify_one();
    }
}

/// The receiving side of an event queue.
pub struct EventReceiver(Arc<Queue>);

/// The depth of a queue made by [`default_event_queue`]: 256 events.
pub const DEFAULT_EVENT_QUEUE_DEPTH: usize = 256;

/// A bounded event queue of [`DEFAULT_EVENT_QUEUE_DEPTH`] (256) events.
pub fn default_event_queue() -> (EventSink, EventReceiver) {
    event_queue(DEFAULT_EVENT_QUEUE_DEPTH)
}

/// A bounded event queue holding at most `capacity` events (at least 1); when full,
/// the oldest event makes room for the newest.
pub fn event_queue(capacity: usize) -> (EventSink, EventReceiver) {
    let queue = Arc::new(Queue {
        capacity: capacity.max(1),
        state: Mutex::new(State::default()),
        notify: Notify::new(),
        dropped: AtomicU64::new(0),
    });
    (
        EventSink(Arc::new(Sender(Arc::clone(&queue)))),
        EventReceiver(queue),
    )
}

impl EventSink {
    /// Appends an event, dropping the oldest one when the queue is full. Never waits.
    /// The event goes out as given: whoever pushes one scrubs it first
    /// ([`ToolContext::redact_secrets`](crate::ToolContext::redact_secrets), as the
    /// door's own events are).
    pub fn push(&self, call_id: u64, key: &str, kind: ToolEventKind) {
        let queue = &self.0 .0;
        {
            let mut state = queue.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.closed {
                return;
            }
            if state.events.len() == queue.capacity {
                state.events.pop_front();
                queue.dropped.fetch_add(1, Ordering::Relaxed);
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            state.events.push_back(ToolEvent {
                seq,
                call_id,
                key: key.to_owned(),
                kind,
            });
        }
        queue.notify.notify_one();
    }

    /// Ends the stream now, for every clone: the receiver gets what is queued, then
    /// `None`. Dropping the last clone does the same.
    pub fn close(&self) {
        self.0 .0.close();
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("capacity", &self.0 .0.capacity)
            .finish()
    }
}

impl EventReceiver {
    /// The next event, waiting for one; `None` once the sink is closed (or its last
    /// clone dropped) and the queue is empty.
    pub async fn recv(&mut self) -> Option<ToolEvent> {
        loop {
            let notified = self.0.notify.notified();
            {
                let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(event) = state.events.pop_front() {
                    return Some(event);
                }
                if state.closed {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Every event queued now, oldest first, without waiting.
    pub fn drain(&mut self) -> Vec<ToolEvent> {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.events.drain(..).collect()
    }

    /// How many events were dropped to make room, since the queue was made.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for EventReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReceiver")
            .field("capacity", &self.0.capacity)
            .field("dropped", &self.dropped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_the_oldest() {
        let (sink, mut rx) = event_queue(3);
        for done in 0..5 {
            sink.push(
                1,
                "t.x@1",
                ToolEventKind::Progress {
                    done,
                    total: Some(5),
                },
            );
        }
        let events = rx.drain();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3, 4], "the newest three, in order");
        assert_eq!(rx.dropped(), 2);
    }

    #[tokio::test]
    async fn recv_waits_then_ends_after_close() {
        let (sink, mut rx) = event_queue(8);
        let producer = tokio::spawn(async move {
            tokio::task::yield_now().await;
            sink.push(7, "t.x@1", ToolEventKind::Started);
            sink.close();
        });
        let first = rx.recv().await.expect("one event");
        assert_eq!((first.call_id, first.kind), (7, ToolEventKind::Started));
        assert_eq!(rx.recv().await, None);
        producer.await.expect("producer ran");
    }

    #[tokio::test]
    async fn recv_ends_when_the_last_sink_is_dropped() {
        let (sink, mut rx) = event_queue(8);
        let other = sink.clone();
        let producer = tokio::spawn(async move {
            tokio::task::yield_now().await;
            sink.push(1, "t.x@1", ToolEventKind::Started);
            drop(sink);
            tokio::task::yield_now().await;
            other.push(1, "t.x@1", ToolEventKind::Finished { ok: true });
            // `other` is dropped here, unclosed.
        });
        let mut kinds = Vec::new();
        while let Some(event) = rx.recv().await {
            kinds.push(event.kind);
        }
        assert_eq!(
            kinds,
            [ToolEventKind::Started, ToolEventKind::Finished { ok: true }]
        );
        producer.await.expect("producer ran");
    }
}
