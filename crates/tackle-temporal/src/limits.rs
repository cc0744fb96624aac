//! How a run is bounded: its activities' timeouts and retries ([`ActivityLimits`],
//! checked before a run or a worker starts), and when it continues as new
//! ([`ContinueAsNew`]) so that no execution's history outgrows what Temporal keeps.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_sdk::{ActivityCancellationType, ActivityCloseTimeouts, ActivityOptions};

/// How a run's activities are timed and retried.
///
/// **Retries.** Temporal tries an activity again when its worker dies or goes
/// silent (no heartbeat for `heartbeat_timeout_ms`), or when it fails in a way that
/// may pass (a model's timeout or 5xx). A model call is tried at most
/// `model_attempts` times. A tool call is tried at most `tool_attempts` times, and
/// never past `tool_deadline_ms` after it was first scheduled; [`ToolRetry`] in
/// `tools` sets both for one tool. An attempt after the first of a call that is not
/// safe to run again runs nothing (its outcome is unknown: the run waits for an
/// operator), so these bound only reads, keyed writes and calls that never started.
///
/// [`validate`](Self::validate) refuses limits that cannot work (a zero timeout, no
/// attempt); a worker checks its own at start ([`AgentWorker::with_limits`]), and a run
/// whose limits are refused fails at once, saying which.
///
/// [`AgentWorker::with_limits`]: crate::AgentWorker::with_limits
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActivityLimits {
    /// The longest one model or tool call may take, in milliseconds (default 300,000).
    pub call_timeout_ms: u64,
    /// How long a worker may go silent while running a call before Temporal gives
    /// the call to another worker, in milliseconds (default 10,000). Workers
    /// heartbeat at a third of it.
    pub heartbeat_timeout_ms: u64,
    /// How often a model call is tried before the run fails (default 3).
    pub model_attempts: u32,
    /// How often a tool call is tried, at most (default 5).
    pub tool_attempts: u32,
    /// How long a tool call may take over all its attempts, from when it was first
    /// scheduled, in milliseconds (default 1,800,000: 30 minutes).
    pub tool_deadline_ms: u64,
    /// Limits of single tools, by key (`namespace.name@version`) or by
    /// `namespace.name` (every version).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolRetry>,
}

/// How one tool's calls are retried (see [`ActivityLimits`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRetry {
    /// How often a call is tried, at most.
    pub attempts: u32,
    /// How long a call may take over all its attempts, in milliseconds.
    pub deadline_ms: u64,
}

/// Why [`ActivityLimits`] were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid activity limits: {field} {problem}")]
pub struct LimitsError {
    /// The field.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl Default for ActivityLimits {
    fn default() -> ActivityLimits {
        ActivityLimits {
            call_timeout_ms: 300_000,
            heartbeat_timeout_ms: 10_000,
            model_attempts: 3,
            tool_attempts: 5,
            tool_deadline_ms: 1_800_000,
            tools: BTreeMap::new(),
        }
    }
}

impl ActivityLimits {
    /// Refuses limits that cannot work: a zero timeout or deadline, a heartbeat
    /// timeout longer than the call timeout, zero attempts, a deadline shorter than
    /// one call.
    pub fn validate(&self) -> Result<(), LimitsError> {
        let refuse = |field: &str, problem: String| {
            Err(LimitsError {
                field: field.to_owned(),
                problem,
            })
        };
        if self.call_timeout_ms == 0 {
            return refuse("call_timeout_ms", "is 0: no call could finish".into());
        }
        if self.heartbeat_timeout_ms == 0 {
            return refuse(
                "heartbeat_timeout_ms",
                "is 0: every call would time out".into(),
            );
        }
        if self.heartbeat_timeout_ms > self.call_timeout_ms {
            return refuse(
                "heartbeat_timeout_ms",
                format!(
                    "({}) is longer than call_timeout_ms ({})",
                    self.heartbeat_timeout_ms, self.call_timeout_ms
                ),
            );
        }
        if self.model_attempts == 0 {
            return refuse("model_attempts", "is 0: no model call would run".into());
        }
        let mut tools = vec![(
            "tool_attempts / tool_deadline_ms".to_owned(),
            self.tool_attempts,
            self.tool_deadline_ms,
        )];
        tools.extend(
            self.tools
                .iter()
                .map(|(key, retry)| (format!("tools[{key}]"), retry.attempts, retry.deadline_ms)),
        );
        for (field, attempts, deadline) in tools {
            if attempts == 0 {
                return refuse(&field, "allows 0 attempts: no call would run".into());
            }
            if deadline < self.call_timeout_ms {
                return refuse(
                    &field,
                    format!(
                        "has a deadline ({deadline} ms) shorter than one call (call_timeout_ms {})",
                        self.call_timeout_ms
                    ),
                );
            }
        }
        Ok(())
    }

    /// The retry limits of calls of `key`.
    fn tool_retry(&self, key: &str) -> (u32, u64) {
        let unversioned = key.split_once('@').map_or(key, |(name, _)| name);
        self.tools
            .get(key)
            .or_else(|| self.tools.get(unversioned))
            .map_or((self.tool_attempts, self.tool_deadline_ms), |r| {
                (r.attempts, r.deadline_ms)
            })
    }

    fn retry(attempts: u32) -> RetryPolicy {
        RetryPolicy::builder()
            .initial_interval(Duration::from_millis(200))
            .backoff_coefficient(2.0)
            .maximum_interval(Duration::from_secs(10))
            .maximum_attempts(attempts.max(1))
            .build()
    }

    pub(crate) fn model_options(&self) -> ActivityOptions {
        ActivityOptions::with_start_to_close_timeout(Duration::from_millis(self.call_timeout_ms))
            .heartbeat_timeout(Duration::from_millis(self.heartbeat_timeout_ms.max(1)))
            .retry_policy(Self::retry(self.model_attempts))
            .build()
    }

    /// A tool call's options: bounded retries, and a cancellation that waits for the
    /// call to stop (or finish), so a cancelled run never leaves a write unrecorded.
    pub(crate) fn tool_options(&self, key: &str) -> ActivityOptions {
        let (attempts, deadline) = self.tool_retry(key);
        ActivityOptions::with_close_timeouts(ActivityCloseTimeouts::ScheduleAndStartToClose {
            schedule_to_close: Duration::from_millis(deadline.max(self.call_timeout_ms)),
            start_to_close: Duration::from_millis(self.call_timeout_ms),
        })
        .heartbeat_timeout(Duration::from_millis(self.heartbeat_timeout_ms.max(1)))
        .retry_policy(Self::retry(attempts))
        .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
        .build()
    }
}

/// When a run continues as new: it ends its execution at a step boundary and starts
/// the next one (same workflow id) from where its loop stands, a
/// [`ReactCheckpoint`], so that no one execution's history grows past what Temporal
/// keeps (by default 51,200 events or 50 MB an execution; past them it terminates the
/// run). Each execution's history then stays about as large as its own steps, and a
/// run of any length fits.
///
/// The checkpoint holds the conversation so far and travels as the next execution's
/// input, which Temporal caps (2 MB by default): a run whose checkpoint is larger
/// than [`MAX_CARRIED_BYTES`] does not continue as new but goes on in its execution,
/// and a warning says so. A conversation that large is past any model's window.
///
/// [`ReactCheckpoint`]: tackle_agent::react::ReactCheckpoint
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContinueAsNew {
    /// When Temporal suggests it (the execution's history passed the server's
    /// suggested count or size: 4,096 events or 4 MB by default). Default `true`.
    pub when_suggested: bool,
    /// Once the execution's history holds this many events (default 10,000).
    pub after_events: u32,
    /// After this many steps in one execution, whatever its history (default none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_steps: Option<usize>,
}

impl Default for ContinueAsNew {
    fn default() -> ContinueAsNew {
        ContinueAsNew {
            when_suggested: true,
            after_events: 10_000,
            after_steps: None,
        }
    }
}

/// The largest [`ReactCheckpoint`] a run carries into its next execution, serialized
/// (1.5 MiB, under Temporal's default 2 MB cap on a payload).
///
/// [`ReactCheckpoint`]: tackle_agent::react::ReactCheckpoint
pub const MAX_CARRIED_BYTES: usize = 1536 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_that_cannot_work_are_refused_naming_the_field() {
        assert_eq!(ActivityLimits::default().validate(), Ok(()));
        let cases = [
            (
                ActivityLimits {
                    call_timeout_ms: 0,
                    ..ActivityLimits::default()
                },
                "call_timeout_ms",
            ),
            (
                ActivityLimits {
                    heartbeat_timeout_ms: 400_000,
                    ..ActivityLimits::default()
                },
                "heartbeat_timeout_ms",
            ),
            (
                ActivityLimits {
                    model_attempts: 0,
                    ..ActivityLimits::default()
                },
                "model_attempts",
            ),
            (
                ActivityLimits {
                    tools: BTreeMap::from([(
                        "bank.pay".to_owned(),
                        ToolRetry {
                            attempts: 0,
                            deadline_ms: 600_000,
                        },
                    )]),
                    ..ActivityLimits::default()
                },
                "tools[bank.pay]",
            ),
        ];
        for (limits, field) in cases {
            let refused = limits.validate().expect_err(field);
            assert_eq!(refused.field, field, "{refused}");
        }
    }

    #[test]
    fn a_tool_gets_its_own_retry_limits_by_key_or_name() {
        let limits = ActivityLimits {
            tools: BTreeMap::from([(
                "bank.pay".to_owned(),
                ToolRetry {
                    attempts: 2,
                    deadline_ms: 600_000,
                },
            )]),
            ..ActivityLimits::default()
        };
        assert_eq!(limits.tool_retry("bank.pay@1"), (2, 600_000));
        assert_eq!(limits.tool_retry("bank.refund@1"), (5, 1_800_000));
    }
}
