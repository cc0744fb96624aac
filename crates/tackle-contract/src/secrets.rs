//! Which parameters hold secrets by their names: [`SECRET_WORDS`] and
//! [`is_secret_name`], which reads a name's last words.

/// The words that make a parameter secret by its name unless told otherwise
/// ([`is_secret_name`]): `api_key`, `password`, `token`, `secret`, `authorization`
/// and their kin.
pub const SECRET_WORDS: &[&str] = &[
    "apikey",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "credential",
    "credentials",
    "privatekey",
];

/// Whether a parameter named `name` holds a secret by its name: its last word, or its
/// last two words joined, is one of `words` (compared in lower case). Words are split
/// at `_`, `-`, `.`, spaces and lower-to-upper case changes, so `api_key`, `apiKey`,
/// `X-Api-Key`, `access_token`, `client_secret` and `db_password` are secret, and
/// `max_tokens`, `token_count` and `password_hint` are not.
pub fn is_secret_name<W: AsRef<str>>(name: &str, words: &[W]) -> bool {
    let separator = |c: char| matches!(c, '_' | '-' | '.' | ' ');
    // The byte spans of the last two words: no allocation, as the door asks this of
    // an open input's every key.
    let mut previous: Option<(usize, usize)> = None;
    let mut last: Option<(usize, usize)> = None;
    let mut start: Option<usize> = None;
    let mut previous_lower = false;
    for (i, c) in name.char_indices() {
        if separator(c) || (c.is_uppercase() && previous_lower) {
            if let Some(begun) = start.take() {
                previous = last;
                last = Some((begun, i));
            }
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        if !separator(c) && start.is_none() {
            start = Some(i);
        }
    }
    if let Some(begun) = start {
        previous = last;
        last = Some((begun, name.len()));
    }
    let Some((from, to)) = last else {
        return false;
    };
    let last = &name[from..to];
    let previous = previous.map(|(from, to)| &name[from..to]);
    words.iter().any(|w| {
        let w = w.as_ref();
        w.eq_ignore_ascii_case(last)
            || previous.is_some_and(|p| {
                w.len() == p.len() + last.len()
                    && w.is_char_boundary(p.len())
                    && w[..p.len()].eq_ignore_ascii_case(p)
                    && w[p.len()..].eq_ignore_ascii_case(last)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_by_their_last_words() {
        for name in [
            "api_key",
            "apiKey",
            "X-Api-Key",
            "apikey",
            "access_token",
            "client_secret",
            "db_password",
            "Authorization",
            "token",
            "private_key",
            "credentials",
        ] {
            assert!(is_secret_name(name, SECRET_WORDS), "{name}");
        }
        for name in [
            "max_tokens",
            "token_count",
            "password_hint",
            "key",
            "monkey",
            "",
            "_",
        ] {
            assert!(!is_secret_name(name, SECRET_WORDS), "{name}");
        }
        assert!(
            is_secret_name("pin", &["pin"]),
            "the words are configurable"
        );
    }
}
