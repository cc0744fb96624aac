//! How a remote tool becomes a tackle tool: its spec (key `mcp.<server>.<tool>`,
//! side effects from its read-only hint, trust `mcp`, its schemas), with names and
//! versions brought to registry form.

use rmcp::model::Tool;
use serde_json::Value;
use tackle_core::{SideEffects, ToolSpec, Trust};

/// Letters, digits, `_` and `-`; anything else becomes `_`.
pub(super) fn slug(text: &str) -> String {
    tackle_core::spec::name_from(text)
}

pub(super) fn version_of(text: &str) -> String {
    let v: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        .collect();
    if v.is_empty() {
        "0".to_owned()
    } else {
        v
    }
}

/// The spec of a remote tool.
pub(super) fn spec_of(tool: &Tool, server: &str, version: &str) -> ToolSpec {
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    let effects = if read_only {
        SideEffects::Read
    } else {
        SideEffects::External
    };
    let description = tool
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map_or_else(
            || format!("`{}` of MCP server `{server}`", tool.name),
            str::to_owned,
        );
    let mut spec = ToolSpec::new(
        format!("mcp.{server}"),
        slug(&tool.name),
        version,
        effects,
        description,
    );
    spec.input_schema = Value::Object(tool.input_schema.as_ref().clone());
    if let Some(output) = &tool.output_schema {
        spec.output_schema = Value::Object(output.as_ref().clone());
    }
    spec.trust = Trust::Mcp;
    spec.tags = vec!["mcp".to_owned()];
    spec
}
