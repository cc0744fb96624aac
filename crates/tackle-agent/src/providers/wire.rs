//! What the HTTP model clients share: how an error body and a failed request become a
//! [`ModelError`].

#[cfg(any(feature = "openai", feature = "ollama", feature = "openai-responses"))]
use std::time::Duration;

use serde_json::Value;

#[cfg(any(feature = "openai", feature = "ollama", feature = "openai-responses"))]
use crate::model::ModelError;

/// How much of an error body a [`ModelError::Status`](crate::model::ModelError::Status) keeps.
pub(crate) const BODY_EXCERPT: usize = 512;

/// The start of an error body: the endpoint's message when it sent one
/// (`{"error": {"message": ...}}` or `{"error": "..."}`), else the text, cut to
/// [`BODY_EXCERPT`] characters.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(bytes).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let text = message.unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
    match text.char_indices().nth(BODY_EXCERPT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Why this build cannot reach `url`, found before any request: the URL is
/// `https://` and the client was built without TLS (`has_tls`), which reqwest would
/// only report as "invalid URL, scheme is not http". The message names the cargo
/// `feature` that adds TLS.
pub(crate) fn missing_tls(url: &str, has_tls: bool, feature: &str) -> Option<String> {
    let https = url
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
    (https && !has_tls).then(|| {
        format!(
            "`{url}` is an https:// URL and this build has no TLS: enable the `{feature}` \
             cargo feature of `tackle-rs` (`cargo add tackle-rs --features {feature}`), \
             or use an http:// endpoint"
        )
    })
}

/// An error and its sources, in one line.
#[cfg(any(feature = "openai", feature = "ollama", feature = "openai-responses"))]
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Posts a JSON `body` to `url` within `timeout` (with `bearer` as the bearer token,
/// when given) and returns the answer's body: an error status is
/// [`ModelError::Status`] with the [`excerpt`] of its body, a failed request is
/// [`request_error`]'s.
#[cfg(any(feature = "openai", feature = "ollama", feature = "openai-responses"))]
pub(crate) async fn post_json(
    http: &reqwest::Client,
    url: &str,
    body: Vec<u8>,
    timeout: Duration,
    bearer: Option<&str>,
) -> Result<Vec<u8>, ModelError> {
    let mut request = http
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .body(body);
    if let Some(key) = bearer {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| request_error(&e, timeout))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| request_error(&e, timeout))?;
    if !status.is_success() {
        return Err(ModelError::Status {
            status: status.as_u16(),
            body: excerpt(&bytes),
        });
    }
    Ok(bytes.to_vec())
}

/// A failed request as a [`ModelError`]: `Timeout` past `timeout`, `Malformed` for a
/// body that could not be read, `Transport` otherwise.
#[cfg(any(feature = "openai", feature = "ollama", feature = "openai-responses"))]
pub(crate) fn request_error(error: &reqwest::Error, timeout: Duration) -> ModelError {
    if error.is_timeout() {
        ModelError::Timeout {
            after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }
    } else if error.is_decode() || error.is_body() {
        ModelError::Malformed {
            message: format!("the answer's body could not be read: {}", chain(error)),
        }
    } else {
        ModelError::Transport {
            message: chain(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_prefer_the_error_message_and_cut_long_bodies() {
        let body = br#"{"error": {"message": "rate limited", "type": "requests"}}"#;
        assert_eq!(excerpt(body), "rate limited");
        assert_eq!(
            excerpt(br#"{"error": "model not found"}"#),
            "model not found"
        );
        let long = "x".repeat(BODY_EXCERPT + 10);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.len(), BODY_EXCERPT + 3);
    }
}
