//! Which replies are answers: one that says something (not empty, not the prompt
//! said back), or one that matches the run's answer schema.

use serde_json::Value;
use tackle_core::validate::SchemaValidator;

use crate::providers::drop_nulls;

/// `text` in lower case, its words separated by one space.
pub(super) fn normal(text: &str) -> String {
    normal_chars(text).collect()
}

/// The characters of [`normal`]`(text)`, made as they are read.
fn normal_chars(text: &str) -> impl Iterator<Item = char> + '_ {
    text.split_whitespace().enumerate().flat_map(|(i, word)| {
        let space = (i > 0).then_some(' ');
        space
            .into_iter()
            .chain(word.chars().flat_map(char::to_lowercase))
    })
}

/// Whether `text` says something: it is not empty, and not the task or the system
/// prompt (given [`normal`]ized) said back; otherwise why not.
pub(super) fn substantive(text: &str, task: &str, system: &str) -> Result<(), String> {
    if text.split_whitespace().next().is_none() {
        return Err("the reply is empty".to_owned());
    }
    // The task itself, or (for a task long enough not to be a word of an answer) the
    // task with a few characters around it. A reply much longer than the task is
    // neither (lower case may lengthen a text, never past twice its bytes). Only a
    // long task or instructions need the reply written out.
    if task.len() < 20 && system.len() < 20 {
        if normal_chars(text).eq(normal_chars(task)) {
            return Err("the reply repeats the task".to_owned());
        }
        return Ok(());
    }
    let reply = normal(text);
    if reply.len() <= 2 * task.len() + 10 {
        let task = normal(task);
        if reply == task
            || (task.len() >= 20 && reply.contains(&task) && reply.len() <= task.len() + 10)
        {
            return Err("the reply repeats the task".to_owned());
        }
    }
    if system.len() >= 20 && reply.len() >= system.len() && reply.contains(system) {
        return Err("the reply repeats the instructions".to_owned());
    }
    Ok(())
}

/// The JSON document of a reply: the text, or the fenced (```` ```json ````) block it
/// is, trimmed.
pub(crate) fn json_body(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim()
}

/// The value of a final answer `text` that must match `validator`'s schema: the text,
/// or a fenced `json` block in it, parsed and validated; otherwise what is wrong.
pub(super) fn answer_value(
    text: &str,
    schema: &Value,
    validator: &SchemaValidator,
) -> Result<Value, String> {
    let mut value: Value = serde_json::from_str(json_body(text))
        .map_err(|e| format!("the reply is not a JSON document ({e})"))?;
    // A provider's strict form sends null for an optional field left out.
    drop_nulls(&mut value, schema);
    let result = validator.validate(&value);
    if result.valid {
        Ok(value)
    } else {
        Err(format!(
            "the reply does not match the required schema: {}",
            result.errors.join("; ")
        ))
    }
}
