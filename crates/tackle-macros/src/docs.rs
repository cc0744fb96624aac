//! Reading rustdoc comments: the tool description and the `# Arguments` list.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of `///` comments (`#[doc = "..."]` attributes), one entry per line, with
/// the single space after `///` removed.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| s.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect()
}

/// The first paragraph, with its lines joined by spaces; `None` when there is none.
pub fn first_paragraph(lines: &[String]) -> Option<String> {
    let paragraph: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if paragraph.is_empty() {
        None
    } else {
        Some(paragraph.join(" "))
    }
}

/// The entries of a `# Arguments` (or `# Parameters`) section: `(name, description)`.
///
/// Accepted entry forms: ``* `name` - text``, ``- `name`: text``, `* name - text`;
/// indented lines that follow continue the entry.
pub fn arguments_section(lines: &[String]) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in lines {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim().to_ascii_lowercase();
            inside = heading == "arguments" || heading == "parameters";
            continue;
        }
        if !inside || trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed
            .strip_prefix("* ")
            .or_else(|| trimmed.strip_prefix("- "))
        {
            if let Some(entry) = parse_entry(rest) {
                entries.push(entry);
                continue;
            }
        }
        if let Some((_, text)) = entries.last_mut() {
            text.push(' ');
            text.push_str(trimmed);
        }
    }
    entries
}

fn parse_entry(rest: &str) -> Option<(String, String)> {
    let rest = rest.trim();
    let (name, after) = if let Some(r) = rest.strip_prefix('`') {
        let end = r.find('`')?;
        (&r[..end], &r[end + 1..])
    } else {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    };
    if name.is_empty() {
        return None;
    }
    let text = after
        .trim_start()
        .trim_start_matches(['-', ':', '\u{2014}', '\u{2013}'])
        .trim();
    Some((name.to_owned(), text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    #[test]
    fn first_paragraph_joins_lines() {
        let l = lines("\nAdd two\nintegers.\n\nMore text.\n");
        assert_eq!(first_paragraph(&l).as_deref(), Some("Add two integers."));
        assert_eq!(first_paragraph(&lines("# Arguments\n* `a` - x")), None);
        assert_eq!(first_paragraph(&[]), None);
    }

    #[test]
    fn arguments_forms() {
        let l = lines(
            "Adds.\n\n# Arguments\n\n* `a` - left operand\n- `b`: right\n  operand, continued\n* c — third\n\n# Errors\n* `d` - not an argument",
        );
        assert_eq!(
            arguments_section(&l),
            vec![
                ("a".into(), "left operand".into()),
                ("b".into(), "right operand, continued".into()),
                ("c".into(), "third".into()),
            ]
        );
    }
}
