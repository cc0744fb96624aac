//! Which characters a tool name, a namespace and a version may hold: the checks both
//! the macro and the runtime apply, and [`name_from`], which makes any text a name.

/// The characters a name or a namespace segment may hold, in words.
pub const NAME_CHARACTERS: &str = "ASCII letters, digits, `_` and `-`";

/// The characters a version may hold, in words.
pub const VERSION_CHARACTERS: &str = "ASCII letters, digits, `.`, `_`, `-` and `+`";

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `text` as a tool name or namespace segment: each character outside
/// [`NAME_CHARACTERS`] becomes `_` (an empty text, `_`). A valid name comes back as
/// it is.
pub fn name_from(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .collect();
    if name.is_empty() {
        "_".to_owned()
    } else {
        name
    }
}

fn version_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')
}

/// Whether `s` is a valid tool name or namespace segment: non-empty,
/// [`NAME_CHARACTERS`] only.
pub fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(name_char)
}

/// Whether `s` is a valid namespace: dot-separated valid segments.
pub fn is_namespace(s: &str) -> bool {
    s.split('.').all(is_name)
}

/// Whether `s` is a valid version: non-empty, [`VERSION_CHARACTERS`] only.
pub fn is_version(s: &str) -> bool {
    !s.is_empty() && s.chars().all(version_char)
}

/// Checks one name or namespace segment; the error says which character is wrong.
pub fn check_name(what: &str, s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    match s.chars().find(|c| !name_char(*c)) {
        Some(c) => Err(format!(
            "the {what} `{s}` has the character {c:?}; use {NAME_CHARACTERS}"
        )),
        None => Ok(()),
    }
}

/// Checks a version; the error says which character is wrong.
pub fn check_version(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("the version is empty".into());
    }
    match s.chars().find(|c| !version_char(*c)) {
        Some(c) => Err(format!(
            "the version `{s}` has the character {c:?}; use {VERSION_CHARACTERS}"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions() {
        assert!(is_name("add_2-x") && !is_name("a.b") && !is_name(""));
        assert!(is_namespace("llm.openai") && !is_namespace("llm..openai"));
        assert!(is_version("2.1.0-rc.1+build") && !is_version("1 0"));
        assert!(check_name("name", "a.b").unwrap_err().contains("'.'"));
        assert!(check_version("1 0").unwrap_err().contains("' '"));
    }
}
