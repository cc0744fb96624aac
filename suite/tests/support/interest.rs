//! A test's own `tracing` subscriber, safe from other tests' threads.
//!
//! `tracing` caches per span or event site whether any subscriber may want it. While
//! one dispatcher alone is alive, that answer comes from whichever thread meets the
//! site first: another test's thread, which has no subscriber, caches "never", and a
//! test's thread-scoped subscriber then misses that site for good.

use std::sync::OnceLock;

/// Sets, once per binary, a process-wide default that answers "sometimes" for every
/// site and wants nothing itself: every site then asks the current subscriber on each
/// call. Call it before setting a thread's subscriber.
pub fn ask_every_call() {
    static UNDECIDED: OnceLock<()> = OnceLock::new();
    UNDECIDED.get_or_init(|| {
        // Only this function sets the default of the binaries that include it.
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
}

/// The default [`ask_every_call`] sets: every site is "sometimes", nothing is enabled.
struct Undecided;

impl tracing::Subscriber for Undecided {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
