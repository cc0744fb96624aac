//! The journal: written ahead by an attempt ([`StoreJournal`]: each call appended
//! before it runs, its outcome right after) and read back for a resume ([`replay`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;
use tackle_core::error::ToolError;
use tackle_core::replay::{CallStarted, Interaction, InteractionKind, Journal, Outcome};

use super::attempt::Attempt;
use super::store::{InFlight, JournalEntry, Resolution};

/// What a journal holds, read for a resume.
pub(super) struct Replayed {
    /// The outcomes to serve, in journal order.
    pub(super) recorded: Vec<Interaction>,
    /// Calls in flight that may not run again.
    pub(super) unknown: Vec<InFlight>,
    /// Calls in flight that kept a note of how far they got (key, input, last note):
    /// made again, they go on from it.
    pub(super) resumable: Vec<(String, Value, Value)>,
    /// The next call number free in any attempt.
    pub(super) next_call: u64,
    /// Calls an operator asked to run again and not yet made again (key, canonical
    /// input): a run restored from a backup makes them rather than hold them.
    pub(super) retried: Vec<(String, String)>,
}

/// Reads a journal: its outcomes (finished calls, and calls an operator resolved)
/// and the calls still in flight.
pub(super) fn replay(journal: Vec<JournalEntry>) -> Replayed {
    let mut started: BTreeMap<(u32, u64), CallStarted> = BTreeMap::new();
    let mut settled: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut notes: BTreeMap<(u32, u64), Value> = BTreeMap::new();
    let mut recorded = Vec::new();
    let mut retried: Vec<(String, String)> = Vec::new();
    let mut next_call = 0;
    for entry in journal {
        match entry {
            JournalEntry::Started { attempt, call } => {
                next_call = next_call.max(call.call + 1);
                let canonical = tackle_core::canonical::canonical(&call.input);
                if let Some(at) = retried
                    .iter()
                    .position(|(key, input)| *key == call.key && *input == canonical)
                {
                    retried.remove(at);
                }
                started.insert((attempt, call.call), call);
            }
            JournalEntry::Finished {
                attempt,
                interaction,
            } => {
                next_call = next_call.max(interaction.call + 1);
                settled.insert((attempt, interaction.call));
                recorded.push(interaction);
            }
            JournalEntry::Resolved {
                attempt,
                call,
                resolution,
            } => {
                settled.insert((attempt, call));
                let Some(call) = started.get(&(attempt, call)) else {
                    continue;
                };
                let outcome = match resolution {
                    Resolution::Succeeded { output } => Outcome::Ok(output),
                    Resolution::Failed { error } => Outcome::Error(ToolError::Execution {
                        key: call.key.clone(),
                        message: error,
                    }),
                    Resolution::Retry => {
                        retried.push((
                            call.key.clone(),
                            tackle_core::canonical::canonical(&call.input),
                        ));
                        continue;
                    }
                };
                recorded.push(Interaction {
                    call: call.call,
                    key: call.key.clone(),
                    kind: call.kind,
                    policy: call.policy,
                    input: call.input.clone(),
                    outcome,
                    shaped: false,
                });
            }
            JournalEntry::Progress {
                attempt,
                call,
                note,
            } => {
                notes.insert((attempt, call), note);
            }
        }
    }
    // A call in flight that kept a note goes on from it when made again. The call
    // made again (the first of a later attempt with the same key and input) took the
    // note over and keeps it at once: from then on the earlier call is settled by it,
    // so a note is handed on once, and only the newest.
    let latest: BTreeMap<(String, String), u32> =
        started
            .iter()
            .fold(BTreeMap::new(), |mut latest, ((attempt, _), call)| {
                let at = latest
                    .entry((
                        call.key.clone(),
                        tackle_core::canonical::canonical(&call.input),
                    ))
                    .or_insert(*attempt);
                *at = (*at).max(*attempt);
                latest
            });
    let mut resumable = Vec::new();
    started.retain(|at, call| {
        if settled.contains(at) {
            return false;
        }
        let Some(note) = notes.remove(at) else {
            return true;
        };
        let taken_over = latest
            .get(&(
                call.key.clone(),
                tackle_core::canonical::canonical(&call.input),
            ))
            .is_some_and(|attempt| *attempt > at.0);
        if !taken_over {
            resumable.push((call.key.clone(), call.input.clone(), note));
        }
        false
    });
    let unknown = started
        .into_iter()
        .filter(|(_, call)| !call.rerun_safe)
        .map(|((attempt, number), call)| InFlight {
            attempt,
            call: number,
            key: call.key,
            input: call.input,
        })
        .collect();
    Replayed {
        recorded,
        unknown,
        resumable,
        next_call,
        retried,
    }
}

/// Appends a cassette's calls to a run's journal, while the attempt holds the run.
pub(super) struct StoreJournal {
    pub(super) attempt: Arc<Attempt>,
    pub(super) number: u32,
    pub(super) run_id: String,
}

impl StoreJournal {
    /// Notes the schema fingerprint of the tool `key` before its first call runs
    /// (see [`Attempt::note_schemas`]). A record that cannot be saved stops the run,
    /// as a journal write that fails does.
    fn note_schema(&self, key: &str) -> Result<(), String> {
        if let Some(failure) = self.attempt.failure() {
            return Err(failure);
        }
        self.attempt.note_schemas([key]).map_err(|e| {
            let message = e.to_string();
            self.attempt.fail(message.clone());
            message
        })
    }

    fn append(&self, entry: &JournalEntry) -> Result<(), String> {
        if let Some(failure) = self.attempt.failure() {
            return Err(failure);
        }
        let written = self
            .attempt
            .keep_lease()
            .map_err(|e| e.to_string())
            .and_then(|()| {
                self.attempt
                    .store
                    .append(&self.run_id, entry)
                    .map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => {
                self.attempt.journaled.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            Err(message) => {
                // The run stops: nothing the journal does not hold goes on.
                self.attempt.fail(message.clone());
                Err(message)
            }
        }
    }
}

impl Journal for StoreJournal {
    fn started(&self, call: &CallStarted) -> Result<(), String> {
        if call.kind == InteractionKind::Tool {
            self.note_schema(&call.key)?;
        }
        let restored = self.attempt.record().restored.clone();
        let held = match restored {
            Some(restored) if !call.rerun_safe && !self.attempt.permit(call) => Some(restored),
            _ => None,
        };
        self.append(&JournalEntry::Started {
            attempt: self.number,
            call: call.clone(),
        })?;
        if let Some(restored) = held {
            // The run may have made this write after the backup was taken: it does
            // not run, and waits, in flight, for an operator.
            let message = format!(
                "the run was restored from a backup taken at {} ms (Unix time) and may have \
                 made the write `{}` after it: it waits as an unknown outcome for an \
                 operator (resolve it, or accept the restore once the world is checked)",
                restored.backed_up_at_ms, call.key
            );
            self.attempt.hold(InFlight {
                attempt: self.number,
                call: call.call,
                key: call.key.clone(),
                input: call.input.clone(),
            });
            self.attempt.fail(message.clone());
            return Err(message);
        }
        Ok(())
    }

    fn finished(&self, interaction: &Interaction) -> Result<(), String> {
        self.append(&JournalEntry::Finished {
            attempt: self.number,
            interaction: interaction.clone(),
        })
    }

    fn progressed(&self, call: u64, note: &Value) -> Result<(), String> {
        self.append(&JournalEntry::Progress {
            attempt: self.number,
            call,
            note: note.clone(),
        })
    }
}

/// The journal of a cassette only read: it takes no call.
pub(super) struct Unwritable;

impl Journal for Unwritable {
    fn started(&self, _: &CallStarted) -> Result<(), String> {
        Err("this cassette is an export: it runs nothing".to_owned())
    }

    fn finished(&self, _: &Interaction) -> Result<(), String> {
        Err("this cassette is an export: it runs nothing".to_owned())
    }
}
