//! Panic messages on stderr without the caller's secrets.
//!
//! The door turns a tool's panic into `ToolError::Panicked` (scrubbed like any error),
//! but Rust's panic hook prints the message to stderr first, and an MCP host logs a
//! server's stderr. While a tool whose caller holds secrets, or whose call has secret
//! arguments, runs, the door marks the thread with them (a log layer scrubs what the
//! tool logs with the same mark: [`crate::secrets::scrub_running`]); the hook tackle
//! installs (once, at the first call, wrapping the hook it finds) prints a marked
//! thread's panic with those secrets and token-shaped strings replaced, and any other
//! panic whose message holds a token-shaped string (a `Bearer ...`, an `sk-...` key)
//! with those replaced; every other panic goes to the previous hook untouched. A program that sets its own hook after tackle's replaces
//! this one.

use std::sync::{Arc, Once};

use crate::context::ToolContext;
use crate::error::panic_message;
use crate::secrets::{running, Redactor};

/// The secrets to keep out of a call's panic message and of what its code logs (see
/// [`crate::secrets::scrub_running`]): the caller's, then the values of the call's secret `arguments`
/// (longest first); `None` when there are none.
pub(super) fn secrets_of(ctx: &ToolContext, arguments: &[String]) -> Option<Arc<[String]>> {
    install();
    if !ctx.has_secrets() && arguments.is_empty() {
        return None;
    }
    Some(
        ctx.secret_values()
            .map(str::to_owned)
            .chain(arguments.iter().cloned())
            .collect(),
    )
}

/// Runs `f` with this thread marked as running a call with `secrets`.
#[inline]
pub(super) fn guarded<T>(secrets: Option<&Arc<[String]>>, f: impl FnOnce() -> T) -> T {
    let Some(secrets) = secrets else {
        return f();
    };
    running::push(Arc::clone(secrets));
    // Popped by a guard, so an unwinding panic pops it too.
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            running::pop();
        }
    }
    let _pop = Pop;
    f()
}

fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let secrets = running::innermost();
            let message = panic_message(info.payload());
            let redactor = match &secrets {
                Some(secrets) => secrets
                    .iter()
                    .fold(Redactor::new(), |r, s| r.with_secret(s.as_str())),
                None => Redactor::new(),
            };
            if secrets.is_none()
                && matches!(redactor.redact_str(&message), std::borrow::Cow::Borrowed(_))
            {
                // Nothing to hide: the program's own hook says it as usual.
                previous(info);
                return;
            }
            let thread = std::thread::current();
            let location = info
                .location()
                .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let context = if secrets.is_some() {
                " (in a tool call)"
            } else {
                ""
            };
            eprintln!(
                "thread '{}' panicked{location}{context}:\n{}",
                thread.name().unwrap_or("<unnamed>"),
                redactor.redact_str(&message)
            );
        }));
    });
}
