//! The replay router: what the door does with one call under a cassette.
//!
//! [`Cassette::route`] implements the table in the [module docs](super): serve a
//! recorded outcome, run the call (and say whether to record it), or refuse it
//! (`CassetteMiss`, `ReplayGap`, `Divergence`). [`Cassette::record`] stores the outcome
//! of a call the router sent to run, once the door has its final form.

use std::collections::BTreeMap;

use serde_json::Value;

use super::cassette::{mark_used, Cassette, Effective, Queue};
use super::diagnose::describe;
use super::file::{Interaction, InteractionKind, Outcome};
use super::journal::CallStarted;
use super::warning::CassetteWarning;
use crate::canonical;
use crate::context::Checkpoints;
use crate::error::ToolError;
use crate::spec::ReplayPolicy;

/// What the door does with one call.
pub(crate) enum Route {
    /// A recorded outcome stands in for the call (the router handed it to the
    /// caller's `serve`); do not execute.
    Served,
    /// Execute; record the outcome when there is a pending record.
    Run(Option<Pending>),
}

/// A recorded outcome served for a call: read where it is kept, while the router
/// holds the cassette, so the caller copies it once, into the call.
pub(crate) struct Serve<'r> {
    /// The recorded outcome (a tombstone serves as the call's `ReplayGap`).
    pub(crate) outcome: &'r Outcome,
    /// The recorded output is the shaped one (not the tool's own, so it is not
    /// checked against its schema).
    pub(crate) shaped: bool,
    /// The call's number in this run, for a tombstone's error.
    pub(crate) call: u64,
}

/// A call's input as the router gets it: borrowed from the call, or handed over
/// (an operation's, which nothing after the router reads: recorded without a copy).
pub(crate) enum Routed<'v> {
    Borrowed(&'v Value),
    Owned(Value),
}

impl Routed<'_> {
    fn get(&self) -> &Value {
        match self {
            Routed::Borrowed(value) => value,
            Routed::Owned(value) => value,
        }
    }

    /// The input to record (scrubbed already): copied when borrowed.
    fn into_owned(self) -> Value {
        match self {
            Routed::Borrowed(value) => value.clone(),
            Routed::Owned(value) => value,
        }
    }
}

/// How many differences of one checked call a report lists.
const SHOWN_CHANGES: usize = 12;

/// The capacity the router's buffer for canonical inputs keeps between calls.
const SCRATCH_KEPT: usize = 4096;

/// A call to record once it finishes.
pub(crate) struct Pending {
    call: u64,
    key: String,
    kind: InteractionKind,
    policy: ReplayPolicy,
    input: Value,
    tombstone: bool,
    /// The recording this call is checked against, for a call that runs in a replay
    /// to compare its outcome with it (see [`Cassette::check`]).
    check: Option<usize>,
}

impl Pending {
    /// Whether the record will be a tombstone (a `fail-loud` call: its outcome is
    /// not kept).
    pub(crate) fn is_tombstone(&self) -> bool {
        self.tombstone
    }

    /// Whether the call runs only to be compared with its recording (which is what
    /// its caller gets): nothing is recorded for it.
    pub(crate) fn is_check(&self) -> bool {
        self.check.is_some()
    }
}

impl Cassette {
    /// Decides what to do with a call (see the table in the module docs). `routed` is
    /// the call's scrubbed input; `canonical` holds its canonical form, the call's key
    /// (see [`crate::secrets`]), once someone made it. The router makes it when it needs
    /// it (to look a recording up) and not before, never redacting again: in a buffer
    /// it keeps, moved into `canonical` when the call goes on to run (approval and the
    /// journal use it then); a served call needs it no more. A served recording is
    /// handed to `serve`, which copies it into the call while the cassette is held.
    /// A recorded call that is `checked` (see [`Cassette::checks`]) is not served: it
    /// runs, with a pending record that compares its outcome with the recording.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn route(
        &self,
        kind: InteractionKind,
        key: &str,
        policy: ReplayPolicy,
        routed: Routed<'_>,
        canonical: &mut Option<String>,
        schema: Option<&str>,
        checked: bool,
        serve: impl FnOnce(Serve<'_>),
    ) -> Result<Route, ToolError> {
        let input = routed.get();
        let mut guard = self.state();
        let state = &mut *guard;
        let call = state.next_call;
        state.next_call += 1;
        // The key's recordings, found once: the schema check and the lookup share them.
        let mut recordings = state.queues.get_mut(key);
        if let Some(fingerprint) = schema {
            let first = match recordings.as_deref_mut() {
                Some(recordings) => !std::mem::replace(&mut recordings.schema_checked, true),
                None if state.checked_schemas.contains(key) => false,
                None => state.checked_schemas.insert(key.to_owned()),
            };
            if first {
                check_schema(
                    &state.recorded_tools,
                    &mut state.tools,
                    &mut state.warnings,
                    key,
                    fingerprint,
                );
            }
        }
        let effective = self.inner.effective;
        if effective == Effective::Live
            || (kind == InteractionKind::Operation && self.inner.live_operations)
        {
            return Ok(Route::Run(None));
        }
        // The call runs, with a record to make: a tombstone, an outcome, or (for a
        // checked call) a comparison with the recording it was found at.
        let run = |routed: Routed<'_>, tombstone, check| {
            Route::Run(Some(Pending {
                call,
                key: key.to_owned(),
                kind,
                policy,
                input: routed.into_owned(),
                tombstone,
                check,
            }))
        };
        match (policy, effective) {
            (ReplayPolicy::FailLoud, Effective::Replay) => {
                return Err(ToolError::ReplayGap {
                    key: key.to_owned(),
                    call,
                })
            }
            (ReplayPolicy::FailLoud, _) => return Ok(run(routed, true, None)),
            // Recording from nothing: every call, reads included, so that the replay
            // needs nothing live.
            (_, Effective::Rewrite | Effective::OnceRecording) => {
                return Ok(run(routed, false, None))
            }
            _ => {}
        }
        // The first recording not used yet, when this call is the one recorded there
        // (as in a replay that calls in the recorded order): it is the first unused
        // recording of the call's key and input, the one the lookup below would find,
        // found without the call's key: the two inputs surely have one canonical form
        // (the same values, members in the same order). Inputs whose forms are the same
        // in other ways (`1.0` and `1`, members in another order) take the lookup.
        let next = state.next_unused;
        if let Some(interaction) = state.recorded.get(next) {
            if interaction.kind == kind
                && interaction.key == key
                && canonical::surely_same(&interaction.input, input)
                && (kind == InteractionKind::Tool
                    || state.operations.get(state.next_operation) == Some(&next))
            {
                if kind == InteractionKind::Operation {
                    state.next_operation += 1;
                }
                mark_used(&mut state.used, &mut state.next_unused, next);
                if checked {
                    return Ok(run(routed, false, Some(next)));
                }
                let interaction = &state.recorded[next];
                serve(Serve {
                    outcome: &interaction.outcome,
                    shaped: interaction.shaped,
                    call,
                });
                return Ok(Route::Served);
            }
        }
        // The call's key, made here when no one made it yet: in a buffer the state
        // keeps, as a served call needs it for this lookup alone; a call that goes on
        // takes it along (below) for approval and the journal.
        let made_here = canonical.is_none();
        let canon = match canonical {
            Some(canon) => canon.as_str(),
            None => {
                state.scratch.clear();
                // One large input does not keep its buffer for the rest of the run.
                state.scratch.shrink_to(SCRATCH_KEPT);
                canonical::canonical_into(input, &mut state.scratch);
                state.scratch.as_str()
            }
        };
        let queue = recordings.and_then(|r| r.by_input.get_mut(canon));
        let recorded_state = Recorded {
            recorded: &state.recorded,
            used: &mut state.used,
            next_unused: &mut state.next_unused,
            operations: &state.operations,
            next_operation: &mut state.next_operation,
        };
        let found = lookup(queue, recorded_state, kind, key, input, call)
            .map_err(|error| self.with_rerecord_hint(error))?;
        if let Some(i) = found {
            if checked {
                if made_here {
                    *canonical = Some(std::mem::take(&mut state.scratch));
                }
                return Ok(run(routed, false, Some(i)));
            }
            let interaction = &state.recorded[i];
            serve(Serve {
                outcome: &interaction.outcome,
                shaped: interaction.shaped,
                call,
            });
            return Ok(Route::Served);
        }
        if made_here {
            *canonical = Some(std::mem::take(&mut state.scratch));
        }
        match (policy, effective) {
            (_, Effective::New) => Ok(run(routed, false, None)),
            // Returned above; listed so that a new policy must be placed here.
            (ReplayPolicy::FailLoud, _) => Ok(run(routed, true, None)),
            (ReplayPolicy::MustStub, _) => Err(self.miss(state, kind, key, input, call)),
            (ReplayPolicy::RecordedResult, _) if self.inner.strict => {
                Err(self.miss(state, kind, key, input, call))
            }
            (ReplayPolicy::RecordedResult, _) => {
                state.warnings.push(CassetteWarning::RanLive {
                    key: key.to_owned(),
                    call,
                    input: canonical.clone().unwrap_or_default(),
                });
                Ok(Route::Run(None))
            }
        }
    }

    /// Hands a call about to run to the journal, if the cassette has one: the
    /// checkpoint the call keeps its progress with then, with the note an earlier
    /// attempt of the same call (same key and input) left, if any.
    pub(crate) fn start(
        &self,
        pending: &Pending,
        canonical: Option<&str>,
        rerun_safe: bool,
    ) -> Result<Option<Box<dyn Checkpoints>>, String> {
        let Some(journaled) = &self.inner.journal else {
            return Ok(None);
        };
        journaled.journal.started(&CallStarted {
            call: pending.call,
            key: pending.key.clone(),
            kind: pending.kind,
            policy: pending.policy,
            input: pending.input.clone(),
            rerun_safe,
        })?;
        let resumed = {
            let mut state = self.state();
            if state.resumed.is_empty() {
                None
            } else {
                let made;
                let canonical = match canonical {
                    Some(canonical) => canonical,
                    None => {
                        made = canonical::canonical(&pending.input);
                        &made
                    }
                };
                let by_input = state.resumed.get_mut(&pending.key);
                let note = by_input
                    .and_then(|m| m.get_mut(canonical))
                    .and_then(|q| q.pop_front());
                state.resumed.retain(|_, m| {
                    m.retain(|_, q| !q.is_empty());
                    !m.is_empty()
                });
                note
            }
        };
        if let Some(note) = &resumed {
            // The call made again holds the note from now on: a second crash finds it.
            journaled.journal.progressed(pending.call, note)?;
        }
        Ok(Some(Box::new(Checkpoint {
            cassette: self.clone(),
            call: pending.call,
            resumed,
        })))
    }

    /// Hands calls that were in flight when an earlier attempt stopped, each with the
    /// last note it kept, to this cassette: the same call made again gets its note
    /// (see [`Checkpoint::resumed`]). `input` is as the journal holds it (redacted).
    #[doc(hidden)] // For the agent crate's durable runs; not a stable API.
    pub fn resume_progress(&self, calls: Vec<(String, Value, Value)>) {
        let mut state = self.state();
        for (key, input, note) in calls {
            state
                .resumed
                .entry(key)
                .or_default()
                .entry(canonical::canonical(&input))
                .or_default()
                .push_back(note);
        }
    }

    /// Compares the outcome of a checked call (`result`, as it would be recorded)
    /// with its recording, notes an [`CassetteWarning::OutcomeChanged`] when they
    /// differ, and hands the recording to `serve`: the caller gets the recorded
    /// outcome either way, so the replay goes on as recorded and reports every
    /// change at its end.
    pub(crate) fn check(
        &self,
        pending: Pending,
        result: Result<Value, ToolError>,
        serve: impl FnOnce(Serve<'_>),
    ) {
        let Some(index) = pending.check else {
            return;
        };
        let mut guard = self.state();
        let state = &mut *guard;
        let Some(interaction) = state.recorded.get(index) else {
            return;
        };
        let now = match result {
            Ok(value) => Outcome::Ok(value),
            Err(error) => Outcome::Error(error),
        };
        if now != interaction.outcome {
            let view = |outcome: &Outcome| serde_json::to_value(outcome).unwrap_or(Value::Null);
            let mut changes: Vec<String> =
                super::changes::json_diff("", &view(&interaction.outcome), &view(&now))
                    .iter()
                    .map(ToString::to_string)
                    .collect();
            if changes.is_empty() {
                // Equal as JSON, unequal as values (a number's spelling): no change.
            } else {
                if changes.len() > SHOWN_CHANGES {
                    let more = changes.len() - SHOWN_CHANGES;
                    changes.truncate(SHOWN_CHANGES);
                    changes.push(format!("... and {more} more"));
                }
                state.warnings.push(CassetteWarning::OutcomeChanged {
                    key: pending.key,
                    call: pending.call,
                    changes,
                });
            }
        }
        serve(Serve {
            outcome: &interaction.outcome,
            shaped: interaction.shaped,
            call: pending.call,
        });
    }

    /// Records a finished call; with a journal, it holds the outcome first (an error
    /// says it could not, and nothing is recorded).
    pub(crate) fn record(
        &self,
        pending: Pending,
        result: Result<Value, ToolError>,
        shaped: bool,
    ) -> Result<(), String> {
        // The door scrubbed the outcome with this cassette's secrets among the rest.
        let outcome = if pending.tombstone {
            Outcome::Tombstone
        } else {
            match result {
                Ok(value) => Outcome::Ok(value),
                Err(error) => Outcome::Error(error),
            }
        };
        let interaction = Interaction {
            call: pending.call,
            key: pending.key,
            kind: pending.kind,
            policy: pending.policy,
            input: pending.input,
            outcome,
            shaped: shaped && !pending.tombstone,
        };
        if let Some(journaled) = &self.inner.journal {
            journaled.journal.finished(&interaction)?;
        }
        self.state().fresh.push(interaction);
        Ok(())
    }
}

/// Where a running call of a journaled run keeps how far it got: see
/// [`ToolContext::checkpoint`](crate::ToolContext::checkpoint).
pub(crate) struct Checkpoint {
    cassette: Cassette,
    call: u64,
    /// The note the same call left in an earlier attempt of the run.
    resumed: Option<Value>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("call", &self.call)
            .field("resumed", &self.resumed)
            .finish()
    }
}

impl Checkpoints for Checkpoint {
    /// Hands `note` to the journal, for the call, redacted as the cassette redacts
    /// what it records.
    fn keep(&self, note: &Value) -> Result<(), String> {
        match &self.cassette.inner.journal {
            Some(journaled) => journaled
                .journal
                .progressed(self.call, &self.cassette.inner.redactor.redact(note)),
            None => Ok(()),
        }
    }

    fn resumed(&self) -> Option<&Value> {
        self.resumed.as_ref()
    }
}

/// Notes a tool whose schema changed since recording, and keeps its schema's
/// fingerprint for the cassette this run writes; once per key (the caller knows).
fn check_schema(
    recorded_tools: &BTreeMap<String, String>,
    tools: &mut BTreeMap<String, String>,
    warnings: &mut Vec<CassetteWarning>,
    key: &str,
    now: &str,
) {
    if let Some(recorded) = recorded_tools.get(key) {
        if *recorded != now {
            warnings.push(CassetteWarning::SchemaChanged {
                key: key.to_owned(),
                recorded: recorded.clone(),
                now: now.to_owned(),
            });
        }
    }
    tools.insert(key.to_owned(), now.to_owned());
}

/// What serving a recording reads and marks, besides the recording's queue.
struct Recorded<'s> {
    recorded: &'s [Interaction],
    used: &'s mut [bool],
    next_unused: &'s mut usize,
    operations: &'s [usize],
    next_operation: &'s mut usize,
}

/// Takes the next recorded outcome for this call from `queue` (the recordings of its
/// key and input, some perhaps served in order already: skipped), if any, and marks
/// it used: its index. An operation must be the next one recorded.
fn lookup(
    queue: Option<&mut Queue>,
    recorded_state: Recorded<'_>,
    kind: InteractionKind,
    key: &str,
    input: &Value,
    call: u64,
) -> Result<Option<usize>, ToolError> {
    let Recorded {
        recorded,
        used,
        next_unused,
        operations,
        next_operation,
    } = recorded_state;
    let Some(queue) = queue else {
        return Ok(None);
    };
    let found = loop {
        match queue.pop_front() {
            Some(i) if used.get(i).is_some_and(|used| *used) => continue,
            found => break found,
        }
    };
    if kind == InteractionKind::Operation {
        let expected = operations.get(*next_operation).copied();
        match (found, expected) {
            (Some(i), Some(e)) if i == e => *next_operation += 1,
            (Some(i), _) => {
                // Put it back: the run diverged, the recording did not change.
                queue.push_front(i);
                let message = match expected {
                    Some(e) => format!(
                        "this call was recorded as call #{}, but call #{} comes first: {}",
                        recorded[i].call,
                        recorded[e].call,
                        describe(&recorded[e], Some(input))
                    ),
                    None => format!(
                        "this call was recorded as call #{}, out of position",
                        recorded[i].call
                    ),
                };
                return Err(ToolError::Divergence {
                    key: key.to_owned(),
                    call,
                    message,
                });
            }
            (None, _) => return Ok(None),
        }
    }
    if let Some(i) = found {
        mark_used(used, next_unused, i);
    }
    Ok(found)
}
