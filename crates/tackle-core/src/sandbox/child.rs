//! The child's side of the `process` sandbox: read one call, run it, answer.

use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use serde_json::Value;

use super::{ChildRequest, CHILD_ENV, ERR, OK};
use crate::abi::{registrations, RegisteredHandler};
use crate::context::{CallScope, ToolContext};
use crate::error::{panic_message, ToolError};

/// Serves one sandboxed call when this process is a sandbox child, then exits; returns
/// at once otherwise. Call it first thing in `main` of every program whose runtime
/// uses a [`ProcessSandbox`](super::ProcessSandbox) (see the [module docs](super)).
///
/// The child reads its call from standard input, runs the `#[tool]` it names and
/// writes the result to the parent. What the tool itself prints goes to standard
/// error, which the parent keeps to explain a child that died.
pub fn serve_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    std::process::exit(run());
}

/// The child's work; its exit code.
fn run() -> i32 {
    let mut out = match response_channel() {
        Ok(out) => out,
        Err(error) => {
            eprintln!("tackle sandbox child: no response channel: {error}");
            return 70;
        }
    };
    let mut text = Vec::new();
    if let Err(error) = std::io::stdin().lock().read_to_end(&mut text) {
        eprintln!("tackle sandbox child: cannot read the request: {error}");
        return 66;
    }
    let split = text.iter().position(|b| *b == b'\n').unwrap_or(text.len());
    let (header, input) = text.split_at(split);
    let parsed = serde_json::from_slice::<ChildRequest>(header).and_then(|request| {
        serde_json::from_slice::<Value>(input.get(1..).unwrap_or_default())
            .map(|input| (request, input))
    });
    let (request, input) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("tackle sandbox child: the request is not valid: {error}");
            return 65;
        }
    };
    drop(text);
    let written = match answer(request, input) {
        Ok(value) => out
            .write_all(OK)
            .and_then(|()| serde_json::to_writer(&mut out, &value).map_err(Into::into)),
        Err(error) => out
            .write_all(ERR)
            .and_then(|()| serde_json::to_writer(&mut out, &error).map_err(Into::into)),
    }
    .and_then(|()| out.flush());
    match written {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("tackle sandbox child: cannot write the response: {error}");
            74
        }
    }
}

/// Runs the requested tool: the `#[tool]` function defined where the parent's is.
fn answer(request: ChildRequest, input: Value) -> Result<Value, ToolError> {
    let ChildRequest {
        key,
        file,
        line,
        call_id,
        secrets,
    } = request;
    let Some(registration) = registrations().find(|r| r.file == file && r.line == line) else {
        return Err(ToolError::Sandbox {
            reason: format!(
                "could not run it: the child program has no `#[tool]` defined at {file}:{line}"
            ),
            key,
        });
    };
    let spec = (registration.spec)();
    let ctx = secrets
        .into_iter()
        .fold(ToolContext::new(), |ctx, (name, value)| {
            ctx.with_secret(name, value)
        });
    let ctx = ctx.for_call(CallScope::new(
        call_id,
        Arc::from(key.as_str()),
        spec.secrets.into(),
        None,
    ));
    let outcome = match registration.handler {
        RegisteredHandler::Sync(run) => catch_unwind(AssertUnwindSafe(|| run(&ctx, input))),
        RegisteredHandler::Async(start) => {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    return Err(ToolError::Sandbox {
                        key,
                        reason: format!("could not run it: no async runtime in the child: {error}"),
                    })
                }
            };
            catch_unwind(AssertUnwindSafe(|| runtime.block_on(start(ctx, input))))
        }
    };
    match outcome {
        Ok(result) => result,
        Err(payload) => Err(ToolError::Panicked {
            key,
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// Where the response goes: standard output as it was when the child started. Standard
/// output itself is pointed at standard error, so a tool that prints cannot corrupt
/// the response.
#[cfg(unix)]
fn response_channel() -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` and `dup2` only copy descriptors this process
    // owns (0-2 are open in a child the parent started with pipes); the new descriptor
    // is owned by the File. It is close-on-exec, so a process the tool starts does not
    // hold the response channel open.
    unsafe {
        let saved = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if saved < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(2, 1) < 0 {
            let error = std::io::Error::last_os_error();
            libc::close(saved);
            return Err(error);
        }
        Ok(std::fs::File::from_raw_fd(saved))
    }
}

/// Where the response goes: standard output (a tool that prints to it corrupts the
/// response on this platform).
#[cfg(not(unix))]
fn response_channel() -> std::io::Result<std::io::Stdout> {
    Ok(std::io::stdout())
}
