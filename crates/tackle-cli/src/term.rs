//! Output for people: colour only on a terminal, never with `NO_COLOR`; text from
//! cassettes and stores escaped ([`escape_for_terminal`]) so that it cannot drive the
//! terminal.

use std::io::IsTerminal;

/// A style for [`paint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Bold,
    Dim,
    Red,
    Green,
    Yellow,
}

/// Whether standard output takes colour.
pub(crate) fn stdout_colours() -> bool {
    colours(std::io::stdout().is_terminal())
}

/// Whether standard error takes colour.
pub(crate) fn stderr_colours() -> bool {
    colours(std::io::stderr().is_terminal())
}

fn colours(terminal: bool) -> bool {
    terminal
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// `text` in `style` when `on`.
pub(crate) fn paint(text: &str, style: Style, on: bool) -> String {
    if !on {
        return text.to_owned();
    }
    let code = match style {
        Style::Bold => "1",
        Style::Dim => "2",
        Style::Red => "31",
        Style::Green => "32",
        Style::Yellow => "33",
    };
    format!("\u{1b}[{code}m{text}\u{1b}[0m")
}

/// Prints `error: <message>` on standard error, each of its lines escaped
/// ([`escape_for_terminal`]): a message may quote a cassette, a store or a file name.
pub(crate) fn error(message: &str) {
    let message: Vec<String> = message.split('\n').map(escape_for_terminal).collect();
    eprintln!(
        "{} {}",
        paint("error:", Style::Red, stderr_colours()),
        message.join("\n")
    );
}

/// Whether the terminal would act on `c` rather than show it: C0 controls (line
/// breaks and tabs included), DEL, C1 controls (U+0080 to U+009F, where U+009B
/// starts a sequence as ESC `[` does), and the bidirectional overrides and isolates
/// (U+202A to U+202E, U+2066 to U+2069) that reorder what follows them.
fn acts_on_terminal(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character a terminal would act on ([`acts_on_terminal`]: ESC,
/// BEL, carriage returns, line breaks, C1 controls, bidirectional overrides) written
/// out as a visible `\u{..}` escape, so a cassette or a file name cannot set the
/// clipboard, erase lines, or reorder what is printed. Text from cassettes and stores
/// passes through it before it is printed; the program's own line breaks are printed
/// around it, not through it.
pub(crate) fn escape_for_terminal(text: &str) -> String {
    if !text.chars().any(acts_on_terminal) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts_on_terminal(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// JSON text (`serde_json` output) with the characters a terminal acts on that JSON
/// leaves raw (DEL, C1 controls, bidirectional overrides) written as JSON `\uXXXX`
/// escapes: the same JSON value, safe on a terminal. Such characters occur only
/// inside JSON strings, where the escape means the character. C0 controls stay:
/// inside strings `serde_json` has escaped them already, and outside them they are
/// the layout's own line breaks and indents.
pub(crate) fn escape_json_for_terminal(json: &str) -> String {
    let raw = |c: char| acts_on_terminal(c) && c >= '\u{7f}';
    if !json.chars().any(raw) {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A path as [`escape_for_terminal`] prints it: a file name is text a folder chose.
pub(crate) fn shown(path: &std::path::Path) -> String {
    escape_for_terminal(&path.display().to_string())
}

/// `text` cut to `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_escapes() {
        let text = "a\u{1b}]52;c;aGk=\u{7}b\u{1b}[2K\u{9b}31m\u{7f}\r\n\u{202e}txt\u{2066}é";
        let escaped = escape_for_terminal(text);
        assert_eq!(
            escaped,
            "a\\u{1b}]52;c;aGk=\\u{7}b\\u{1b}[2K\\u{9b}31m\\u{7f}\\u{d}\\u{a}\\u{202e}txt\\u{2066}é"
        );
        assert_eq!(escape_for_terminal("plain: ok → ü"), "plain: ok → ü");
    }

    #[test]
    fn json_stays_the_same_value() {
        let value = serde_json::json!({"k": "\u{9b}2J\u{1b}\u{202e}x\u{7f}\n"});
        for json in [
            value.to_string(),
            serde_json::to_string_pretty(&value).expect("JSON"),
        ] {
            let text = escape_json_for_terminal(&json);
            assert!(
                !text
                    .chars()
                    .any(|c| acts_on_terminal(c) && c != '\n' && c != ' '),
                "{text}"
            );
            let back: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(back, value);
        }
    }
}
