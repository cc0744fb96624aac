//! A capturing `tracing` subscriber for tests: every span's name and fields, as text.

use std::sync::{Arc, Mutex};

/// Runs `f` with `capture` as this thread's subscriber (after
/// [`interest::ask_every_call`](super::interest::ask_every_call), so that no other
/// test's thread decides for it which sites it sees).
pub fn capturing<R>(capture: &Arc<Capture>, f: impl FnOnce() -> R) -> R {
    super::interest::ask_every_call();
    let dispatch = tracing::Dispatch::from(Arc::clone(capture));
    tracing::dispatcher::with_default(&dispatch, || {
        // A site first met by another thread while the default was being set may
        // keep the answer it had before: ask every site again.
        tracing::callsite::rebuild_interest_cache();
        f()
    })
}

/// A capturing `tracing` subscriber: every span's name and fields, as text.
#[derive(Default)]
pub struct Capture {
    pub spans: Mutex<Vec<String>>,
    /// Every event's fields, as text.
    pub events: Mutex<Vec<String>>,
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={}", field.name(), value));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut line = span.metadata().name().to_owned();
        span.record(&mut Fields(&mut line));
        let mut spans = self.spans.lock().unwrap();
        spans.push(line);
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let index = id.into_u64() as usize - 1;
        values.record(&mut Fields(&mut spans[index]));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = event.metadata().name().to_owned();
        event.record(&mut Fields(&mut line));
        self.events.lock().unwrap().push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
