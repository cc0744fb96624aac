//! What the benchmarks share: the tool they call and a poller for calls that complete
//! at once.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tackle::tool;

/// Add two integers.
#[tool(namespace = "math", version = "1", side_effects = none)]
pub fn add(
    /// left operand
    a: i64,
    /// right operand
    b: i64,
) -> i64 {
    a + b
}

/// Polls a future that must complete at once (a sync tool's call, a replayed call).
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("these calls complete on their first poll"),
    }
}
