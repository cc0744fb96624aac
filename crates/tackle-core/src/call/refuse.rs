//! A call its caller refused before the gates (see [`Run::refuse`](crate::run::Run::refuse)):
//! resolved, numbered, capability-checked and audited as any call, its input gate
//! refusing with the caller's reason; the tool does not run.

use std::time::Instant;

use serde_json::Value;

use super::{audit, capability, resolve, stop, CallReport, Gate, Input, Json, RunState, Runtime};
use crate::audit::GateDecision;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::validate::ValidationIssue;

impl Runtime {
    /// A call of `run` (or a plain call) whose input its caller refused (`why`)
    /// before the gates: resolved, numbered, capability-checked and audited as any
    /// call, its input gate refusing, and ended with [`ToolError::InvalidInput`];
    /// the tool does not run.
    pub(crate) fn refuse_report_in(
        &self,
        run: Option<&RunState>,
        key: &str,
        input: Value,
        ctx: &ToolContext,
        why: ValidationIssue,
    ) -> CallReport {
        let start = Instant::now();
        let mut held = None;
        let tool = self.early(key, &mut held);
        let mut call = self.start::<Json>(run, key, None, tool, None, Input::Value(input), ctx);
        if tracing::level_enabled!(tracing::Level::INFO) {
            call.span = audit::span(&mut call);
        }
        let span = call.span.clone();
        let flow = span.in_scope(|| {
            resolve::stage(self, &mut call)?;
            capability::stage(&mut call)?;
            call.trail
                .gates
                .set(Gate::Input, GateDecision::Refused(why.message.clone()));
            stop::<Json>(ToolError::InvalidInput {
                key: call.key().to_owned(),
                errors: vec![why],
            })
        });
        self.finish(&mut call, flow, Some(start));
        let result = call.take_outcome();
        CallReport {
            call_id: call.id(),
            key: call.key().to_owned(),
            result,
            execution: call.trail.execution,
            duration: start.elapsed(),
            shaped: None,
            findings: Vec::new(),
        }
    }
}
