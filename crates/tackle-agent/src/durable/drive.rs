//! Driving a run: its [`Run`] over a runtime, the ReAct loop checkpointed at each step
//! boundary ([`DurableRun::drive`]) or calls of the program's own
//! ([`DurableRun::hold`]), the lease renewed meanwhile, and the run's end.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tackle_core::call::Runtime;
use tackle_core::context::ToolContext;
use tackle_core::run::Run;

use super::attempt::{load, take};
use super::error::DurableError;
use super::lease::{held_by_other, now_ms};
use super::store::RunStatus;
use super::DurableRun;
use crate::model::ChatModel;
use crate::react::{ReactSkill, ReactState, StepControl, StopReason};
use crate::skill::{Skill, SkillRun, SkillState};

impl DurableRun {
    /// This attempt as a [`Run`] over `runtime`: its id is the run's, its cassette
    /// the journal (every door call and model call made on it is journaled), its
    /// approver the run's decisions, and its calls stop when the attempt loses the
    /// run (its lease lapsed and another process took it). [`drive`](Self::drive)
    /// makes its calls on it; code that makes calls of its own does too.
    pub fn run(&self, runtime: &Arc<Runtime>) -> Run {
        *self
            .attempt
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(runtime);
        Run::new(runtime)
            .with_id(self.run_id())
            .with_cassette(self.cassette.clone())
            .with_approver(self.approver())
            .with_cancellation(self.attempt.lost.child_token())
    }

    /// Runs `skill` on the run's task with `ctx`, checkpointing the run's state at
    /// each step boundary and renewing the run's lease while it runs. With
    /// `pause_after = Some(n)`, the run stops at the first step boundary after `n`
    /// steps, status [`RunStatus::Paused`]; otherwise it runs to its end
    /// ([`RunStatus::Done`], or [`RunStatus::Failed`] with the error). A journal write
    /// that fails stops the run at once: [`DurableError::Journal`], status
    /// [`RunStatus::Interrupted`], and the model is not asked again. When it returns,
    /// the run is let go.
    ///
    /// An attempt drives once: to go on after a pause, [`resume`](Self::resume) the
    /// run (a new attempt, over the journal as it is now). A second `drive` of the
    /// same attempt is [`DurableError::Driven`].
    pub async fn drive(
        &self,
        runtime: &Arc<Runtime>,
        skill: &ReactSkill,
        ctx: &ToolContext,
        pause_after: Option<usize>,
    ) -> Result<ReactState, DurableError> {
        if let Some(message) = self.attempt.failure() {
            return self.interrupted(message);
        }
        if self.attempt.driven.swap(true, Ordering::SeqCst) {
            return Err(DurableError::Driven {
                run_id: self.run_id(),
            });
        }
        take(&self.attempt)?;
        let run = self.run(runtime);
        let unnoted = std::mem::take(
            &mut *self
                .attempt
                .unnoted
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.attempt
            .note_schemas(unnoted.iter().map(String::as_str))?;
        let task = self.task();
        // Steps up to the last checkpoint replay from the journal: saved already.
        let saved = self
            .attempt
            .record()
            .state
            .as_ref()
            .map_or(0, |s| s.step_index);
        let mut failed_checkpoint: Option<DurableError> = None;
        let attempt = &self.attempt;
        let mut observe = |state: &ReactState| {
            if attempt.failure().is_some() || attempt.lost.is_cancelled() {
                return StepControl::Pause;
            }
            let pending = !attempt.record().pending.is_empty();
            if state.step_index > saved || pending {
                if let Err(e) = attempt.save(false, |r| r.state = Some(state.clone())) {
                    failed_checkpoint = Some(e);
                    return StepControl::Pause;
                }
                if pending {
                    // A call of the last step waits for a decision.
                    return StepControl::Pause;
                }
            }
            match pause_after {
                Some(n) if state.step_index >= n => StepControl::Pause,
                _ => StepControl::Continue,
            }
        };
        let outcome = self
            .hold(skill.run_observed(&run, &task, ctx, &mut observe))
            .await;
        if let Some(e) = failed_checkpoint {
            if !matches!(e, DurableError::Held { .. }) {
                let _ = self.attempt.save(true, |_| {});
            }
            return Err(e);
        }
        if let Some(message) = self.attempt.failure() {
            return self.interrupted(message);
        }
        if self.attempt.lost.is_cancelled() {
            // Someone else holds the run now: nothing of ours is saved.
            return Err(self.lost()?);
        }
        if let Some(forged) = self.attempt.forgery() {
            return Err(self.forged(forged)?);
        }
        let mut result = match outcome {
            Ok(state) => Ok(state),
            Err(error) => Err(DurableError::Agent(error)),
        };
        self.attempt.save(true, |record| match &mut result {
            Ok(state) => {
                let paused = !state.done
                    && pause_after.is_some_and(|n| state.step_index >= n)
                    && matches!(state.stop_reason, Some(StopReason::Paused { .. }));
                record.status = if !record.pending.is_empty() {
                    state.stop_reason = Some(StopReason::AwaitingApproval);
                    RunStatus::AwaitingApproval
                } else if paused {
                    RunStatus::Paused
                } else {
                    RunStatus::Done
                };
                record.state = Some(state.clone());
            }
            Err(error) => {
                record.status = RunStatus::Failed {
                    error: error.to_string(),
                };
            }
        })?;
        result
    }

    /// Runs `work` (calls of its own on [`run`](Self::run), for a run that is not an
    /// agent loop) while renewing the run's lease, as [`drive`](Self::drive) does. When
    /// the lease is lost to another process, the run's calls are cancelled and `work`
    /// ends as they do. Then end the run with [`finish`](Self::finish).
    pub async fn hold<F: std::future::Future>(&self, work: F) -> F::Output {
        tokio::pin!(work);
        let period = (self.attempt.options.lease / 3).max(Duration::from_millis(1));
        loop {
            tokio::select! {
                outcome = &mut work => return outcome,
                () = tokio::time::sleep(period) => {
                    match self.attempt.save(false, |_| {}) {
                        Ok(()) => {}
                        Err(DurableError::Held { .. }) => self.attempt.lost.cancel(),
                        Err(error) => tracing::warn!(
                            run = %self.run_id(),
                            %error,
                            "the run's lease could not be renewed; it is tried again"
                        ),
                    }
                }
            }
        }
    }

    /// Ends a run whose calls were made by code of its own (see [`hold`](Self::hold)),
    /// and lets it go: [`RunStatus::Done`] when `outcome` is `Ok`,
    /// [`RunStatus::Failed`] with the error otherwise. A run whose calls wait for
    /// approval ([`pending_approvals`](Self::pending_approvals)) is not ended: it stops
    /// with [`RunStatus::AwaitingApproval`], to be resumed once they are decided. A
    /// journal that failed stops it as [`drive`](Self::drive) does
    /// ([`DurableError::Journal`], status [`RunStatus::Interrupted`]), and an attempt
    /// that lost the run saves nothing ([`DurableError::Held`]).
    pub fn finish(&self, outcome: Result<(), String>) -> Result<RunStatus, DurableError> {
        if let Some(message) = self.attempt.failure() {
            self.interrupted(message)?;
        }
        if self.attempt.lost.is_cancelled() {
            return Err(self.lost()?);
        }
        if let Some(forged) = self.attempt.forgery() {
            return Err(self.forged(forged)?);
        }
        let mut status = RunStatus::Running;
        self.attempt.save(true, |record| {
            record.status = if !record.pending.is_empty() {
                RunStatus::AwaitingApproval
            } else {
                match &outcome {
                    Ok(()) => RunStatus::Done,
                    Err(error) => RunStatus::Failed {
                        error: error.clone(),
                    },
                }
            };
            status = record.status.clone();
        })?;
        Ok(status)
    }

    /// Ends an attempt that met a decision its approval key does not verify: status
    /// `failed` with the error, which it gives back.
    fn forged(&self, forged: DurableError) -> Result<DurableError, DurableError> {
        let error = forged.to_string();
        self.attempt.save(true, |record| {
            record.status = RunStatus::Failed {
                error: error.clone(),
            };
        })?;
        Ok(forged)
    }

    /// Why this attempt lost the run: who holds it now (or a conflict, once let go).
    fn lost(&self) -> Result<DurableError, DurableError> {
        let record = load(&*self.attempt.store, &self.run_id())?;
        Ok(
            held_by_other(&record, &self.attempt.options.holder, now_ms()).unwrap_or(
                DurableError::Conflict {
                    run_id: record.run_id,
                },
            ),
        )
    }

    /// Ends an attempt whose journal failed: status `interrupted` when the store
    /// takes it, and the error; or, when the attempt held writes of a restored run,
    /// status `unknown_outcome` listing them.
    fn interrupted(&self, message: String) -> Result<ReactState, DurableError> {
        let held = self.attempt.held();
        if !held.is_empty() {
            // A restored run's writes that may have been made after its backup.
            let status = RunStatus::UnknownOutcome {
                calls: held.clone(),
            };
            let _ = self.attempt.save(true, |r| r.status = status.clone());
            return Err(DurableError::UnknownOutcome {
                run_id: self.run_id(),
                calls: held,
            });
        }
        let status = RunStatus::Interrupted {
            error: message.clone(),
        };
        let _ = self.attempt.save(true, |r| r.status = status.clone());
        Err(DurableError::Journal {
            run_id: self.run_id(),
            message,
        })
    }

    /// Runs the agent skill `skill` as this run, with `model` over `runtime`: as
    /// [`drive`](Self::drive) to the end, then reads the answer as the skill's state
    /// `S`, as [`Skill::run`] does.
    pub async fn drive_skill<S: SkillState>(
        &self,
        runtime: &Arc<Runtime>,
        skill: &Skill,
        model: Arc<dyn ChatModel>,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, DurableError> {
        if !skill.runs_as_agent() {
            return Err(DurableError::NotAnAgent {
                site_id: skill.site_id(),
            });
        }
        skill.enter(runtime, ctx).await?;
        let react = skill.react(model, &runtime.tools())?;
        let state = self.drive(runtime, &react, ctx, None).await?;
        Ok(skill.answer(state)?)
    }
}
