//! A coarse timer for the HTTP server's header-read timeout.
//!
//! hyper arms a timer each time a connection waits for a request's head. With Tokio's
//! timer that is a registration in its timer wheel and a wake-up schedule per request,
//! which cost a keep-alive round trip about a tenth of its time. The timeout only has
//! to fire eventually (seconds, not microseconds), so here a sleep is a deadline in a
//! shared list, and one task checks the list four times a second: arming costs an
//! allocation and a push.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tackle_core::CancellationToken;

/// How often the list is checked: a timeout fires up to this late.
const TICK: Duration = Duration::from_millis(250);

/// The timer: cheap to clone, one checking task per server.
#[derive(Clone, Default)]
pub(crate) struct CoarseTimer {
    waiting: Arc<Mutex<Vec<Weak<Waiting>>>>,
}

/// One sleep's deadline and, once polled, who to wake.
struct Waiting {
    deadline: Instant,
    waker: Mutex<Option<Waker>>,
}

/// A sleep of [`CoarseTimer`].
struct CoarseSleep {
    waiting: Arc<Waiting>,
    list: Arc<Mutex<Vec<Weak<Waiting>>>>,
    listed: bool,
}

impl CoarseTimer {
    /// Checks the list until `stop` is cancelled, waking the sleeps that are due and
    /// dropping the ones nobody holds.
    pub(crate) fn run(&self, stop: CancellationToken) {
        let waiting = Arc::clone(&self.waiting);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(TICK) => {}
                }
                let now = Instant::now();
                let mut due = Vec::new();
                waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retain(|entry| match entry.upgrade() {
                        Some(sleep) if sleep.deadline <= now => {
                            due.push(sleep);
                            false
                        }
                        Some(_) => true,
                        None => false,
                    });
                for sleep in due {
                    if let Some(waker) = sleep
                        .waker
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take()
                    {
                        waker.wake();
                    }
                }
            }
        });
    }
}

impl hyper::rt::Timer for CoarseTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CoarseSleep {
            waiting: Arc::new(Waiting {
                deadline,
                waker: Mutex::new(None),
            }),
            list: Arc::clone(&self.waiting),
            listed: false,
        })
    }
}

impl Future for CoarseSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.waiting.deadline {
            return Poll::Ready(());
        }
        *self
            .waiting
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        if !self.listed {
            self.listed = true;
            let entry = Arc::downgrade(&self.waiting);
            self.list
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(entry);
        }
        Poll::Pending
    }
}

impl hyper::rt::Sleep for CoarseSleep {}
