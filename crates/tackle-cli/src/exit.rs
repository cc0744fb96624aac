//! Exit codes, and the error that carries one.

use std::fmt;
use std::process::ExitCode;

use tackle_core::{ToolError, ToolErrorKind};

/// The exit code of a command whose reader closed standard output before it was
/// all written (`cargo tackle runs list | head`): 141, as for a program ended by
/// `SIGPIPE` (128 + 13).
pub const CLOSED_OUTPUT: i32 = 141;

/// Makes a closed standard output end the program quietly with [`CLOSED_OUTPUT`],
/// as it ends other command-line tools, in place of a panic's message (Rust ignores
/// `SIGPIPE`, so a write to a closed pipe fails, and `println!` panics on it). Other
/// panics are reported as before.
pub(crate) fn quiet_when_output_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_OUTPUT);
        }
        report(info);
    }));
}

/// How a command ended, as its exit code. Scripts can rely on these numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Exit {
    /// 0: it did what was asked.
    Success,
    /// 1: it ran, and the answer is no: the tool failed, the cassettes differ, a
    /// check found problems, a recording is left pending.
    Failure,
    /// 2: bad usage or bad input: an unknown flag, arguments that are not UTF-8,
    /// arguments that are not JSON or break the tool's schema.
    Usage,
    /// 3: no such thing: an unknown tool key, a missing file, nothing pending.
    NotFound,
    /// 4: refused: a capability not granted, an approval denied, a pending recording
    /// that is a symbolic link or is reached through one out of its folder.
    Refused,
    /// 5: a file that cannot be used: a corrupt or incomplete cassette, a file that
    /// is not a regular file (a FIFO, a device), a pipeline that does not parse, a
    /// recording that cannot serve the call.
    BadData,
    /// 6: the environment failed: a file that cannot be written, a server that cannot
    /// start, a `cargo` that cannot be run.
    Io,
    /// 7: a regression: a case of an eval got worse than its baseline
    /// (`cargo tackle eval diff`).
    Regressed,
    /// `cargo test`'s own exit code, which `cargo tackle eval run` passes through
    /// when the tests failed (cargo's is 101); never 0.
    Cargo(u8),
}

impl Exit {
    /// The exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::NotFound => 3,
            Exit::Refused => 4,
            Exit::BadData => 5,
            Exit::Io => 6,
            Exit::Regressed => 7,
            Exit::Cargo(code) => code,
        }
    }

    /// The exit for a tool call that failed with `error`.
    pub fn of_tool_error(error: &ToolError) -> Exit {
        match error.kind() {
            ToolErrorKind::NotFound | ToolErrorKind::Ambiguous => Exit::NotFound,
            ToolErrorKind::InvalidInput => Exit::Usage,
            ToolErrorKind::CapabilityDenied
            | ToolErrorKind::ApprovalDenied
            | ToolErrorKind::Sandbox
            | ToolErrorKind::MissingContext => Exit::Refused,
            ToolErrorKind::CassetteMiss | ToolErrorKind::ReplayGap | ToolErrorKind::Divergence => {
                Exit::BadData
            }
            _ => Exit::Failure,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// Why a command stopped: what to tell the person, and the exit code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CliError {
    /// The exit.
    pub exit: Exit,
    /// What went wrong, naming the file or key.
    pub message: String,
}

impl CliError {
    /// An error with exit `exit`.
    pub fn new(exit: Exit, message: impl fmt::Display) -> CliError {
        CliError {
            exit,
            message: message.to_string(),
        }
    }
}

impl From<ToolError> for CliError {
    fn from(error: ToolError) -> CliError {
        CliError::new(Exit::of_tool_error(&error), error)
    }
}
