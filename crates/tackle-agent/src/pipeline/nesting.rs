//! A look at a document's nesting before the YAML parser sees it.
//!
//! The parser refuses a document nested deeper than its own limit, but it takes time
//! in proportion to the square of the depth to get there (a hundred thousand `[` take
//! seconds). This scan is linear: it follows flow collections (`[`, `{`) outside
//! quotes and comments, and block indentation (each `- ` counting as a level), and
//! stops at the first line that goes deeper than [`MAX_NESTING`].

use super::PipelineError;

/// The deepest nesting a pipeline document may have: 64 levels (a pipeline needs a
/// handful).
pub const MAX_NESTING: usize = 64;

/// The largest pipeline document read: 4 MiB.
pub const MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;

/// Refuses a document larger than [`MAX_DOCUMENT_BYTES`] or nested deeper than
/// [`MAX_NESTING`], naming the line and column where it goes too deep.
pub(super) fn check(text: &str) -> Result<(), PipelineError> {
    scan(text, "a pipeline").map_err(|(line, column, message)| PipelineError::Parse {
        line,
        column,
        message,
    })
}

/// [`check`] for any YAML document (`what` names it in the size error): the line,
/// the column and what is wrong.
pub(crate) fn scan(text: &str, what: &str) -> Result<(), (usize, usize, String)> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err((
            0,
            0,
            format!(
                "the document is {} bytes, more than the {MAX_DOCUMENT_BYTES} {what} may have",
                text.len()
            ),
        ));
    }
    let too_deep = |line: usize, column: usize| {
        (
            line,
            column,
            format!("the document is nested deeper than {MAX_NESTING} levels"),
        )
    };
    // Indentations of the open block collections, innermost last.
    let mut blocks: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let content = line.trim_start_matches(' ');
        if flow == 0 {
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            // Each `- ` opens a sequence one level further in.
            let mut indent = line.len() - content.len();
            let mut rest = content;
            loop {
                while blocks.last().is_some_and(|&open| open > indent) {
                    blocks.pop();
                }
                if blocks.last() != Some(&indent) {
                    blocks.push(indent);
                }
                if blocks.len() > MAX_NESTING {
                    return Err(too_deep(number, indent + 1));
                }
                match rest.strip_prefix("- ").or_else(|| rest.strip_prefix("-\t")) {
                    Some(after) => {
                        let after_trimmed = after.trim_start();
                        indent += 2 + (after.len() - after_trimmed.len());
                        rest = after_trimmed;
                    }
                    None => break,
                }
            }
        }
        // Flow collections, outside quotes and comments.
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        for (column, c) in line.char_indices() {
            match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '\'' | '"' => quote = Some(c),
                    '#' if previous == ' ' || previous == '\t' => break,
                    '[' | '{' => {
                        flow += 1;
                        if blocks.len() + flow > MAX_NESTING {
                            return Err(too_deep(number, column + 1));
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Option<(usize, usize)> {
        match check(text) {
            Err(PipelineError::Parse { line, column, .. }) => Some((line, column)),
            _ => None,
        }
    }

    #[test]
    fn ordinary_documents_pass() {
        let doc = "graph: g # a comment with [ and {\nnodes:\n  - id: a\n    kind: tool\n    tool: t\n    inputs: {city: \"{{state.city}}\", tags: [a, '[', \"{\"]}\n    out: y\n";
        assert_eq!(refused(doc), None);
    }

    #[test]
    fn depth_is_found_in_flow_and_block_and_compact_forms() {
        let flow = format!("a: {}", "[".repeat(MAX_NESTING + 1));
        assert_eq!(refused(&flow), Some((1, MAX_NESTING + 3)));
        let at_limit = format!(
            "{}{}",
            "[".repeat(MAX_NESTING - 1),
            "]".repeat(MAX_NESTING - 1)
        );
        assert_eq!(refused(&at_limit), None);
        let block: String = (0..=MAX_NESTING)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(refused(&block).map(|(line, _)| line), Some(MAX_NESTING + 1));
        let compact = format!("{}x", "- ".repeat(MAX_NESTING + 1));
        assert!(refused(&compact).is_some());
        // Quotes hide brackets.
        let quoted = format!("a: \"{}\"", "[".repeat(1000));
        assert_eq!(refused(&quoted), None);
    }

    #[test]
    fn size_is_bounded() {
        let big = "a: b\n".repeat(MAX_DOCUMENT_BYTES / 5 + 1);
        assert!(refused(&big).is_some());
    }
}
