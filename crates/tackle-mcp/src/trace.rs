//! W3C trace context across MCP (SEP-414): one trace through two processes.
//!
//! With the `otel` feature, a program that traces with OpenTelemetry through
//! `tracing` (the `tracing-opentelemetry` layer) gets one trace across an MCP hop:
//!
//! * an **imported** call sends the trace context of the span it runs in (the door's
//!   `tool.call` span) as `traceparent` and `tracestate` in the request's `_meta`
//!   (unless the import says not to: [`ImportOptions::with_trace_context`], for a
//!   server that should not learn the caller's trace IDs);
//!
//! [`ImportOptions::with_trace_context`]: crate::ImportOptions::with_trace_context
//! * a **served** call reads them from the request's `_meta` and runs in a span
//!   `mcp.tools/call` whose parent is the caller's span, so the door's span and
//!   everything under it continue the caller's trace.
//!
//! The W3C format is written and read by OpenTelemetry's own `TraceContextPropagator`
//! (an invalid `traceparent` is ignored: the call starts a trace of its own). Without
//! the feature, or without the layer, nothing is sent and a received context is not
//! read.

use rmcp::model::MetaObject;

/// Writes the current span's trace context into `meta` (`traceparent`, and
/// `tracestate` when there is one). Nothing when the span has no OpenTelemetry
/// context.
#[cfg(feature = "otel")]
pub(crate) fn inject(meta: &mut MetaObject) {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return;
    }
    let mut fields = std::collections::HashMap::new();
    opentelemetry_sdk::propagation::TraceContextPropagator::new()
        .inject_context(&context, &mut fields);
    for (name, value) in fields {
        if !value.is_empty() {
            meta.0.insert(name, serde_json::Value::String(value));
        }
    }
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
pub(crate) fn inject(_meta: &mut MetaObject) {}

/// The span a served call runs in: `mcp.tools/call`, continuing the trace named by
/// `meta` when it names a valid one.
#[cfg(feature = "otel")]
pub(crate) fn served_span(tool: &str, meta: &MetaObject) -> tracing::Span {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let span = tracing::info_span!("mcp.tools/call", mcp.tool = tool);
    let fields: std::collections::HashMap<String, String> = ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(|name| {
            meta.0
                .get(name)
                .and_then(serde_json::Value::as_str)
                .map(|value| (name.to_owned(), value.to_owned()))
        })
        .collect();
    if fields.contains_key("traceparent") {
        let parent = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&fields);
        if parent.span().span_context().is_valid() {
            // Without the OpenTelemetry layer there is no trace to continue.
            let _ = span.set_parent(parent);
        }
    }
    span
}

/// Without the `otel` feature: no span of its own (the door's `tool.call` span is
/// the served call's).
#[cfg(not(feature = "otel"))]
pub(crate) fn served_span(_tool: &str, _meta: &MetaObject) -> tracing::Span {
    tracing::Span::none()
}
