//! Capabilities: what a caller is allowed to do.
//!
//! A tool lists the permissions it needs (`requires_capability`, for example
//! `fs:write` or `tools:broker_request`); a caller holds [`Capabilities`], a set of
//! grants. A grant is either an exact permission or a glob in which `*` stands for any
//! run of characters (so `tools:*` grants every `tools:` permission and `*` grants
//! everything). The rule is deny by default: a tool runs only when *every* permission
//! it lists is granted, and a caller with no grants can call only tools that need none.
//! The check happens at the door before the input is validated or the tool runs.

use serde::{Deserialize, Serialize};

/// A caller's grants. Cheap to clone; build with [`Capabilities::with_grant`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Capabilities {
    grants: Vec<String>,
}

impl Capabilities {
    /// No grants: denies every permission.
    pub fn none() -> Capabilities {
        Capabilities::default()
    }

    /// Adds a grant (an exact permission or a `*` glob).
    pub fn with_grant(mut self, pattern: impl Into<String>) -> Capabilities {
        self.grants.push(pattern.into());
        self
    }

    /// The grants, in the order they were added.
    pub fn grants(&self) -> &[String] {
        &self.grants
    }

    /// Whether some grant covers this permission.
    pub fn allows(&self, permission: &str) -> bool {
        self.grants.iter().any(|g| glob_match(g, permission))
    }

    /// The permissions in `required` that no grant covers, in their order.
    pub fn missing(&self, required: &[String]) -> Vec<String> {
        required
            .iter()
            .filter(|p| !self.allows(p))
            .cloned()
            .collect()
    }
}

/// Matches `text` against `pattern`, where `*` matches any run of characters
/// (including none) and every other character matches itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == text;
    }
    // Byte by byte: `*` is one byte, and a run of the pattern's other characters can
    // only match the same characters of the text (UTF-8 has no character whose bytes
    // begin inside another's), so this matches as character by character would.
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Position of the last `*` seen and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            // Let the last `*` swallow one more byte and retry.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_glob_grants() {
        let caps = Capabilities::none()
            .with_grant("tools:*")
            .with_grant("fs:read");
        assert!(caps.allows("tools:broker_request"));
        assert!(caps.allows("tools:"));
        assert!(caps.allows("fs:read"));
        assert!(!caps.allows("fs:write"));
        assert!(!caps.allows("fs:read:all"));
        assert!(!caps.allows("other:tools:x"));
    }

    #[test]
    fn no_grants_grant_nothing() {
        let caps = Capabilities::none();
        assert!(!caps.allows("x"));
        assert!(!caps.allows(""));
        assert_eq!(caps.missing(&["a".into(), "b".into()]), vec!["a", "b"]);
    }

    #[test]
    fn every_permission_must_be_granted() {
        let caps = Capabilities::none().with_grant("net:*");
        let required = vec!["net:http".to_string(), "fs:write".to_string()];
        assert_eq!(caps.missing(&required), vec!["fs:write"]);
    }

    #[test]
    fn glob_edge_cases() {
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(glob_match("a*b*c", "abc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("*:write", "db:write"));
        assert!(!glob_match("*:write", "db:writes"));
        assert!(glob_match("a**", "abc"));
        assert!(glob_match("ä*", "äö"));
        assert!(glob_match("*ö", "äö"));
        assert!(glob_match("*é*", "café au lait"));
        assert!(!glob_match("a*", "ä"));
        assert!(!glob_match("*ä", "äö"));
    }
}
