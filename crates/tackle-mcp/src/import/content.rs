//! The value of a remote tool's result: its structured content, its text (or the
//! JSON the text holds), or, when it holds images, audio or files, its blocks as
//! content parts.

use rmcp::model::CallToolResult;
use serde_json::Value;
use tackle_core::content::ContentPart;
use tackle_core::ToolError;

/// The value of a result without structured content: its text, or the JSON object or
/// array the text holds (many servers return JSON as text).
fn unstructured(text: String) -> Value {
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(text),
    }
}

/// The value of a result whose content holds an image, audio or a binary resource:
/// its blocks as a list of [`ContentPart`]s (text, images, files), which a ReAct run
/// sends the model as parts and tackle's MCP server sends on as content. `None` when
/// every block is text.
fn with_attachments(blocks: &[rmcp::model::ContentBlock]) -> Option<Value> {
    let wire = serde_json::to_value(blocks).ok()?;
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_owned);
    let parts: Vec<ContentPart> = wire
        .as_array()?
        .iter()
        .filter_map(|block| {
            let mime =
                || text(block, "mimeType").unwrap_or_else(|| "application/octet-stream".into());
            Some(match block.get("type")?.as_str()? {
                "text" => ContentPart::text(text(block, "text")?),
                "image" => ContentPart::Image {
                    mime_type: mime(),
                    data: text(block, "data")?,
                },
                "audio" => ContentPart::File {
                    mime_type: mime(),
                    data: text(block, "data")?,
                    name: None,
                },
                "resource" => {
                    let resource = block.get("resource")?;
                    match text(resource, "blob") {
                        Some(blob) => ContentPart::File {
                            mime_type: text(resource, "mimeType")
                                .unwrap_or_else(|| "application/octet-stream".into()),
                            data: blob,
                            name: text(resource, "uri"),
                        },
                        None => ContentPart::text(text(resource, "text")?),
                    }
                }
                "resource_link" => ContentPart::text(format!("[resource {}]", text(block, "uri")?)),
                _ => return None,
            })
        })
        .collect();
    if !parts.iter().any(ContentPart::is_attachment) {
        return None;
    }
    serde_json::to_value(parts).ok()
}

/// The value of a remote tool's result (see the module docs).
pub(super) fn value_of(result: CallToolResult, key: &str) -> Result<Value, ToolError> {
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        return Err(ToolError::Execution {
            key: key.to_owned(),
            message: text.join("\n"),
        });
    }
    // Images and files win over structured content, which cannot hold them as such
    // (a tackle server sends both: parts as content, and the same parts as JSON under
    // `result`).
    if let Some(parts) = with_attachments(&result.content) {
        return Ok(parts);
    }
    Ok(match result.structured_content {
        Some(structured) => structured,
        None => unstructured(text.join("\n")),
    })
}
