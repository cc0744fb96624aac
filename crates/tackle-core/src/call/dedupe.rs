//! Stage 4, deduplicate: one execution per idempotency key within a run.
//!
//! A `write` or `external` tool whose spec names an `idempotency_key` input field runs
//! once per tool and value of that field within a [`Run`](crate::run::Run) (the run keeps
//! the memory; a plain call has none). A later call with the same
//! key, having passed its own capability and input stages, gets the first call's
//! outcome (marked `deduplicated`) without running the tool; while the first call is
//! still running, it waits for it. If the first call is dropped before it ends, a
//! waiting call runs in its place.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::Notify;

use super::{Call, Effect, Flow, Now, Step};
use crate::audit::Execution;
use crate::canonical::{canonical, FnvMap};
use crate::error::ToolError;
use crate::sanitize::Finding;
use crate::shape::ShapeReport;

/// The idempotency memory of one run.
#[derive(Debug, Default)]
pub(crate) struct Idempotency {
    slots: Mutex<FnvMap<String, Arc<Slot>>>,
}

#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
    changed: Notify,
}

#[derive(Debug, Default)]
enum SlotState {
    #[default]
    Running,
    Settled(Settled),
    Abandoned,
}

/// What the first call of a key ended with: what later calls receive.
#[derive(Clone, Debug)]
struct Settled {
    result: Result<Value, ToolError>,
    shaped: Option<Box<ShapeReport>>,
    findings: Vec<Finding>,
}

/// A call's hold on its idempotency key: the call that holds it runs, and settles it
/// when it ends. Dropped unsettled (the call was dropped), it lets a waiter run.
#[derive(Debug)]
pub(crate) struct Claim {
    slot: Arc<Slot>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut state = self
            .slot
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, SlotState::Running) {
            *state = SlotState::Abandoned;
            drop(state);
            self.slot.changed.notify_waiters();
        }
    }
}

/// The stage without waiting: done when no idempotency key applies to the call (a
/// plain call, a tool that changes nothing or names no key), which is most calls;
/// otherwise the call waits in [`stage`], which makes the key and may wait for
/// another call that holds it.
#[inline]
pub(super) fn now<X: Effect>(call: &Call<'_, X>) -> Now<X> {
    let spec = call.spec();
    let keyed = spec.side_effects.mutates()
        && call.run.is_some()
        && (call.tool().idempotency_fn.is_some() || spec.idempotency_key.is_some());
    ControlFlow::Continue(if keyed { Step::Wait } else { Step::Done })
}

#[inline]
pub(super) async fn stage<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    let (memory, key) = match idempotency_key(call) {
        Ok(Some(found)) => found,
        Ok(None) => return ControlFlow::Continue(()),
        Err(error) => return super::stop::<X>(error),
    };
    // Boxed: rare, and it keeps the common call's future small.
    match Box::pin(claim_or_wait(memory, key)).await {
        Ok(claim) => {
            call.claim = Some(claim);
            ControlFlow::Continue(())
        }
        Err(first) => {
            call.trail.execution = Execution::Deduplicated;
            call.trail.shaped = first.shaped;
            call.trail.findings = first.findings;
            ControlFlow::Break(match first.result {
                Ok(view) => X::from_view(view),
                Err(error) => Err(X::from_error(error)),
            })
        }
    }
}

/// Hands a finished call's outcome to the calls waiting on its key.
#[inline]
pub(super) fn settle<X: Effect>(call: &mut Call<'_, X>) {
    let Some(claim) = call.claim.take() else {
        return;
    };
    // Kept as the outcome's JSON view, for the calls that come later.
    let key = call.key();
    let Some(result) = &call.outcome else {
        return;
    };
    let result = match result {
        Ok(output) => X::view(output)
            .map(std::borrow::Cow::into_owned)
            .map_err(|why| ToolError::Execution {
                key: key.to_owned(),
                message: format!("the first call's output has no JSON form: {why}"),
            }),
        Err(error) => Err(X::error_view(error, key).into_owned()),
    };
    let settled = Settled {
        result,
        shaped: call.trail.shaped.clone(),
        findings: call.trail.findings.clone(),
    };
    *claim
        .slot
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = SlotState::Settled(settled);
    claim.slot.changed.notify_waiters();
}

/// The run's memory and this call's key in it, when the call is one to deduplicate;
/// an error when it is one and its input has no JSON view to key it by.
#[inline]
fn idempotency_key<'a, X: Effect>(
    call: &mut Call<'a, X>,
) -> Result<Option<(&'a Idempotency, String)>, ToolError> {
    let ctx = call.ctx;
    let tool = call.tool();
    let spec = call.spec();
    if !spec.side_effects.mutates() {
        return Ok(None);
    }
    let Some(run) = call.run else {
        return Ok(None);
    };
    let memory = &run.memory.idempotency;
    if let Some(make) = &tool.idempotency_fn {
        let key = (make.0)(call.made_input(None)?, ctx);
        return Ok(Some((memory, format!("{}\n{key}", tool.key()))));
    }
    let Some(field) = spec.idempotency_key.as_deref() else {
        return Ok(None);
    };
    let Some(value) = call.made_input(None)?.get(field) else {
        return Ok(None);
    };
    Ok(Some((
        memory,
        format!("{}\n{}", tool.key(), canonical(value)),
    )))
}

/// The key's claim when no call holds it, else the outcome of the call that did.
async fn claim_or_wait(memory: &Idempotency, key: String) -> Result<Claim, Settled> {
    let slot = {
        let mut slots = memory.slots.lock().unwrap_or_else(PoisonError::into_inner);
        match slots.get(&key) {
            Some(slot) => Arc::clone(slot),
            None => {
                let slot = Arc::new(Slot::default());
                slots.insert(key, Arc::clone(&slot));
                return Ok(Claim { slot });
            }
        }
    };
    loop {
        let changed = slot.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        {
            let mut state = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
            match &*state {
                SlotState::Settled(first) => return Err(first.clone()),
                SlotState::Abandoned => {
                    *state = SlotState::Running;
                    return Ok(Claim {
                        slot: Arc::clone(&slot),
                    });
                }
                SlotState::Running => {}
            }
        }
        changed.await;
    }
}
