//! How a runtime's tools look to MCP clients: their `tools/list` entries (names,
//! schemas, annotations from side effects; outputs wrapped in `{"result": ..}` for
//! clients before 2026-07-28), and a call's outcome as a `tools/call` result (content
//! parts as MCP image, audio and resource content).

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Map, Value};
use tackle_core::content::{parts_of, ContentPart};
use tackle_core::{Runtime, SideEffects, ToolSpec};

use crate::names::NameMap;
use crate::McpError;

/// One served tool: its `tools/list` entry for clients of revisions before
/// 2026-07-28 (a non-object output wrapped in `{"result": ..}`) and for those from it
/// on (any output as itself, SEP-2106), and the permissions a client needs to see it.
pub(super) struct Served {
    pub(super) legacy: Tool,
    pub(super) current: Tool,
    pub(super) needs: Vec<String>,
}

/// Whether a request's revision is 2026-07-28 or later: outputs go as themselves.
pub(super) fn unwrapped_outputs(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The `tools/list` entries of `runtime`'s tools, named by `names`, sorted by key,
/// each with the permissions it needs.
pub(super) fn listing(runtime: &Runtime, names: &NameMap) -> Result<Vec<Served>, McpError> {
    runtime
        .registry()
        .list()
        .map(|tool| {
            let name = names.name_of(tool.key()).unwrap_or(tool.key());
            Ok(Served {
                legacy: describe(name, tool.spec(), false)?,
                current: describe(name, tool.spec(), true)?,
                needs: tool.spec().permissions.clone(),
            })
        })
        .collect()
}

/// Whether an output schema describes objects only (else it is served wrapped).
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Whether the tool declares an output schema (`true` and `{}` declare nothing).
fn declares_output(schema: &Value) -> bool {
    !(schema == &Value::Bool(true)
        || schema.as_object().is_some_and(|o| o.is_empty())
        || is_content_schema(schema))
}

/// Whether a tool's output is content parts (a `ContentPart` or a list of them): such
/// an output goes as MCP content (text, images, resources) and declares no output
/// schema, since structured content cannot carry images as such.
fn is_content_schema(schema: &Value) -> bool {
    let named = |s: &Value| s.get("title").and_then(Value::as_str) == Some("ContentPart");
    let reference =
        |s: &Value| s.get("$ref").and_then(Value::as_str) == Some("#/$defs/ContentPart");
    named(schema)
        || schema
            .get("items")
            .is_some_and(|items| named(items) || reference(items))
}

/// The MCP output schema of a tool: its own when it describes objects, or when
/// `unwrapped` (revision 2026-07-28 on); wrapped in `{"result": ...}` otherwise; none
/// when the tool declares no output schema.
fn output_schema(spec: &ToolSpec, unwrapped: bool) -> Option<Value> {
    let schema = &spec.output_schema;
    if !declares_output(schema) {
        return None;
    }
    if unwrapped || is_object_schema(schema) {
        return Some(schema.clone());
    }
    let mut inner = schema.clone();
    let mut wrapper = Map::new();
    if let Some(obj) = inner.as_object_mut() {
        if let Some(dialect) = obj.shift_remove("$schema") {
            wrapper.insert("$schema".into(), dialect);
        }
        // `$ref`s point at the root's `$defs`; keep them at the root.
        let defs = obj.shift_remove("$defs");
        wrapper.insert("type".into(), json!("object"));
        wrapper.insert("properties".into(), json!({ "result": inner }));
        wrapper.insert("required".into(), json!(["result"]));
        if let Some(defs) = defs {
            wrapper.insert("$defs".into(), defs);
        }
    } else {
        wrapper.insert("type".into(), json!("object"));
        wrapper.insert("properties".into(), json!({ "result": inner }));
        wrapper.insert("required".into(), json!(["result"]));
    }
    Some(Value::Object(wrapper))
}

/// The `tools/list` entry of a tool (see [`output_schema`] for `unwrapped`).
fn describe(name: &str, spec: &ToolSpec, unwrapped: bool) -> Result<Tool, McpError> {
    let effects = spec.side_effects;
    let read_only = matches!(effects, SideEffects::None | SideEffects::Read);
    let mut tool = json!({
        "name": name,
        "title": format!("{} ({})", spec.name, spec.key()),
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": effects.mutates(),
            // Calling again with the same arguments changes nothing more: a read, or
            // a write keyed by an idempotency key.
            "idempotentHint": spec.rerun_safe(),
            "openWorldHint": effects == SideEffects::External,
        },
    });
    if let Some(schema) = output_schema(spec, unwrapped) {
        tool["outputSchema"] = schema;
    }
    serde_json::from_value(tool).map_err(|e| McpError::Describe {
        key: spec.key(),
        message: e.to_string(),
    })
}

/// The `tools/call` result of a call (a non-object output as itself when
/// `unwrapped`, in `{"result": ..}` otherwise), built in rmcp's types directly.
pub(super) fn result_of(
    outcome: Result<Value, tackle_core::ToolError>,
    spec: &ToolSpec,
    unwrapped: bool,
) -> CallToolResult {
    let value = match outcome {
        Ok(value) => value,
        Err(error) => return CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    };
    let content = match parts_of(&value) {
        // Images and files go as MCP image content and binary resources.
        Some(parts) => match parts.iter().enumerate().map(part_block).collect() {
            Ok(blocks) => blocks,
            Err(e) => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "the result could not be encoded: {e}"
                ))])
            }
        },
        None => vec![ContentBlock::text(match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })],
    };
    let mut result = CallToolResult::success(content);
    if declares_output(&spec.output_schema) {
        result.structured_content = Some(if unwrapped || is_object_schema(&spec.output_schema) {
            value
        } else {
            json!({ "result": value })
        });
    }
    result
}

/// The MCP content block of the `i`th part of a result.
fn part_block((i, part): (usize, &ContentPart)) -> Result<ContentBlock, serde_json::Error> {
    let wire = match part {
        ContentPart::Text { text } => return Ok(ContentBlock::text(text.clone())),
        ContentPart::Image { mime_type, data } => {
            json!({"type": "image", "mimeType": mime_type, "data": data})
        }
        // Audio goes as MCP audio content.
        ContentPart::File {
            mime_type, data, ..
        } if mime_type.starts_with("audio/") => {
            json!({"type": "audio", "mimeType": mime_type, "data": data})
        }
        ContentPart::File {
            mime_type,
            data,
            name,
        } => json!({"type": "resource", "resource": {
            "uri": name.clone().unwrap_or_else(|| format!("tackle:part/{i}")),
            "mimeType": mime_type,
            "blob": data,
        }}),
    };
    serde_json::from_value(wire)
}
