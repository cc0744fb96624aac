//! Content parts: text, images and files, in tool results and in messages.
//!
//! Most tools return JSON and models read it as text. Some return an image (a chart, a
//! screenshot) or a file (a PDF). Such a tool returns a [`ContentPart`], or a list of
//! them, as its output:
//!
//! ```json
//! {"type": "image", "mimeType": "image/png", "data": "<base64>"}
//! [{"type": "text", "text": "The chart:"}, {"type": "image", "mimeType": "image/png", "data": "..."}]
//! ```
//!
//! This is the shape MCP gives image content, so an imported MCP tool's images arrive
//! in it and tackle's MCP server sends it on as image content. A ReAct run reads such
//! an output with [`split_output`]: the text goes to the model as the tool's result,
//! with a placeholder where each image or file was ([`ContentPart::placeholder`]), and
//! the images and files go beside it as parts of the tool message, in each provider's
//! form (see `Message::parts` in the agent crate's `tackle_agent::model`).
//!
//! ```
//! use tackle::content::{split_output, ContentPart};
//!
//! let chart = ContentPart::image("image/png", b"\x89PNG...");
//! let output = serde_json::to_value(vec![ContentPart::text("Sales by month:"), chart.clone()]).unwrap();
//! let (text, parts) = split_output(&output).expect("the output holds an image");
//! assert_eq!(text, "Sales by month:\n[image/png image, 7 bytes: attached]");
//! assert_eq!(parts, [chart]);
//! ```

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One part of a message or a tool result. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Its media type, such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Its bytes, in standard base64.
        data: String,
    },
    /// A file, such as a PDF.
    File {
        /// Its media type, such as `application/pdf`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Its bytes, in standard base64.
        data: String,
        /// Its name, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> ContentPart {
        ContentPart::Text { text: text.into() }
    }

    /// An image of media type `mime_type` made of `bytes`.
    pub fn image(mime_type: impl Into<String>, bytes: &[u8]) -> ContentPart {
        ContentPart::Image {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// A file of media type `mime_type` made of `bytes`, named `name`.
    pub fn file(mime_type: impl Into<String>, bytes: &[u8], name: Option<String>) -> ContentPart {
        ContentPart::File {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            name,
        }
    }

    /// Whether it is an image or a file (not text).
    pub fn is_attachment(&self) -> bool {
        !matches!(self, ContentPart::Text { .. })
    }

    /// Its media type (`text/plain` for text).
    pub fn mime_type(&self) -> &str {
        match self {
            ContentPart::Text { .. } => "text/plain",
            ContentPart::Image { mime_type, .. } | ContentPart::File { mime_type, .. } => mime_type,
        }
    }

    /// Its base64 data (`None` for text).
    pub fn data(&self) -> Option<&str> {
        match self {
            ContentPart::Text { .. } => None,
            ContentPart::Image { data, .. } | ContentPart::File { data, .. } => Some(data),
        }
    }

    /// Its bytes, decoded (`None` for text, or data that is not base64).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        base64::engine::general_purpose::STANDARD
            .decode(self.data()?)
            .ok()
    }

    /// A `data:` URL of an image or a file (`None` for text).
    pub fn data_url(&self) -> Option<String> {
        Some(format!("data:{};base64,{}", self.mime_type(), self.data()?))
    }

    /// What stands in the text of a message for an image or a file: its kind, media
    /// type and size, such as `[image/png image, 3 KiB: attached]`; the text itself for
    /// a text part. A model that cannot be sent the part reads this instead, with
    /// `attached` replaced (see [`ContentPart::unsent`]).
    pub fn placeholder(&self) -> String {
        self.described("attached")
    }

    /// The placeholder of a part that could not be sent to the model: the text
    /// fallback of a protocol that takes no images or files where this one is.
    pub fn unsent(&self) -> String {
        self.described("not shown: this model's protocol takes no such part here")
    }

    fn described(&self, status: &str) -> String {
        let (kind, name) = match self {
            ContentPart::Text { text } => return text.clone(),
            ContentPart::Image { .. } => ("image", None),
            ContentPart::File { name, .. } => ("file", name.as_deref()),
        };
        let size = self
            .data()
            .map_or(0, |d| d.trim_end_matches('=').len() * 3 / 4);
        let size = if size >= 10 * 1024 {
            format!("{} KiB", size / 1024)
        } else {
            format!("{size} bytes")
        };
        let name = name.map(|n| format!(" `{n}`")).unwrap_or_default();
        format!("[{} {kind}{name}, {size}: {status}]", self.mime_type())
    }
}

/// The text of a message whose `parts` cannot be sent where it goes: each part's
/// [placeholder](ContentPart::placeholder) in `text` becomes its
/// [`unsent`](ContentPart::unsent) text, and a part the text does not name is named
/// after it.
pub fn text_fallback(text: &str, parts: &[ContentPart]) -> String {
    let mut out = text.to_owned();
    for part in parts.iter().filter(|p| p.is_attachment()) {
        let placeholder = part.placeholder();
        if out.contains(&placeholder) {
            out = out.replacen(&placeholder, &part.unsent(), 1);
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&part.unsent());
        }
    }
    out
}

/// Reads a tool's output as content when it is a content part with an image or a
/// file, or a list of content parts among which is one: the text (text parts, and
/// each image's or file's [placeholder](ContentPart::placeholder), one per line) and
/// the images and files, in order. `None` for any other output (JSON or text, which a
/// model reads as it is).
pub fn split_output(output: &Value) -> Option<(String, Vec<ContentPart>)> {
    let parts = parts_of(output)?;
    let text: Vec<String> = parts.iter().map(ContentPart::placeholder).collect();
    let attachments = parts
        .into_iter()
        .filter(ContentPart::is_attachment)
        .collect();
    Some((text.join("\n"), attachments))
}

/// The content parts of a tool's output, in order, when it is a content part with an
/// image or a file, or a list of content parts among which is one (see
/// [`split_output`]); `None` for any other output.
pub fn parts_of(output: &Value) -> Option<Vec<ContentPart>> {
    let parts: Vec<ContentPart> = match output {
        Value::Object(map) if matches!(map.get("type"), Some(Value::String(_))) => {
            vec![serde_json::from_value(output.clone()).ok()?]
        }
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| match item {
                Value::Object(map) if matches!(map.get("type"), Some(Value::String(_))) => {
                    serde_json::from_value(item.clone()).ok()
                }
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    parts
        .iter()
        .any(ContentPart::is_attachment)
        .then_some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_have_the_mcp_shape_and_other_outputs_are_not_content() {
        let image = ContentPart::image("image/png", &[1, 2, 3]);
        assert_eq!(
            serde_json::to_value(&image).unwrap(),
            json!({"type": "image", "mimeType": "image/png", "data": "AQID"})
        );
        assert_eq!(image.bytes(), Some(vec![1, 2, 3]));
        assert_eq!(image.data_url().unwrap(), "data:image/png;base64,AQID");
        assert_eq!(image.placeholder(), "[image/png image, 3 bytes: attached]");
        let file = ContentPart::file("application/pdf", &[0; 20_480], Some("q3.pdf".into()));
        assert_eq!(
            file.placeholder(),
            "[application/pdf file `q3.pdf`, 20 KiB: attached]"
        );
        assert!(file.unsent().contains("not shown"));
        assert_eq!(
            text_fallback(
                "chart: [image/png image, 3 bytes: attached]",
                &[image.clone(), file.clone()]
            ),
            format!("chart: {}\n{}", image.unsent(), file.unsent())
        );
        assert_eq!(split_output(&json!({"type": "text", "text": "hi"})), None);
        assert_eq!(split_output(&json!({"type": "image"})), None, "no data");
        assert_eq!(split_output(&json!({"type": "order", "id": 7})), None);
        assert_eq!(split_output(&json!([1, 2])), None);
        assert_eq!(split_output(&json!("a string")), None);
        let (text, parts) = split_output(&serde_json::to_value(&image).unwrap()).unwrap();
        assert_eq!(text, "[image/png image, 3 bytes: attached]");
        assert_eq!(parts, [image]);
    }
}
