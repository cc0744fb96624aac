//! Output for people: colour only on a terminal, never with `NO_COLOR`.

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

/// Prints `error: <message>` on standard error.
pub(crate) fn error(message: &str) {
    eprintln!(
        "{} {message}",
        paint("error:", Style::Red, stderr_colours())
    );
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
