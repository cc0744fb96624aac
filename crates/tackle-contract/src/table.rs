//! The reference table of `#[tool]`'s attributes: every attribute in the table's
//! order ([`ATTRIBUTES`]), found by name ([`attribute`]), and the Markdown table of
//! `docs/macro.md` made from them ([`reference_table`]).

use crate::attr;
use crate::attribute::Attribute;

/// Every attribute of `#[tool]`, in the order of the reference table in
/// `docs/macro.md`, which is made from this list (a test of this crate checks that the
/// table is this list, row by row).
pub const ATTRIBUTES: &[Attribute] = &[
    attr::SIDE_EFFECTS,
    attr::NAME,
    attr::NAMESPACE,
    attr::VERSION,
    attr::DESCRIPTION,
    attr::REPLAY_POLICY,
    attr::REQUIRES_CAPABILITY,
    attr::IDEMPOTENCY_KEY,
    attr::COST_ESTIMATE,
    attr::TAGS,
    attr::EXAMPLES,
    attr::DEPRECATED,
    attr::INPUT_SCHEMA,
    attr::OUTPUT_SCHEMA,
    attr::EXECUTION_MODE,
    attr::NEEDS_APPROVAL,
    attr::TIMEOUT_MS,
    attr::MAX_RESULT_TOKENS,
    attr::RESULT_SHAPING,
    attr::SECRETS,
    attr::TRUST,
    attr::BLOCKING,
    attr::SENSITIVITY,
    attr::PREFERRED_MODEL,
    attr::DEFER_LOADING,
    attr::REVEALS_SECRETS,
    attr::SANDBOX,
    attr::PARAMS,
    attr::CRATE,
];

/// The attribute with this name, if `#[tool]` has one.
pub fn attribute(name: &str) -> Option<&'static Attribute> {
    ATTRIBUTES.iter().find(|a| a.name == name)
}

/// The reference table of `docs/macro.md`'s "Attributes" section: its header and a
/// row per attribute of [`ATTRIBUTES`].
pub fn reference_table() -> String {
    let mut table = String::from("| attribute | value | default | meaning |\n|---|---|---|---|\n");
    for a in ATTRIBUTES {
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            a.written, a.value, a.default, a.meaning
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::{Form, InSpec};
    use crate::words::WordSet;
    use crate::{ExecutionMode, SandboxKind, Sensitivity, Trust};

    #[test]
    fn every_attribute_is_described_once() {
        let names: Vec<&str> = ATTRIBUTES.iter().map(|a| a.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "an attribute described twice");
        for a in ATTRIBUTES {
            assert!(a.written.starts_with(&format!("`{}", a.name)), "{a:?}");
        }
    }

    /// The reference table in `docs/macro.md` is made from [`ATTRIBUTES`]: after a
    /// change here, write it with `TACKLE_BLESS=1 cargo test -p tackle-contract`.
    #[test]
    fn the_reference_table_is_the_attributes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/macro.md");
        let doc = std::fs::read_to_string(&path).expect("docs/macro.md");
        let header = "| attribute | value | default | meaning |";
        let start = doc.find(header).expect("the table's header");
        let end = doc[start..]
            .find("\n\n")
            .map_or(doc.len(), |at| start + at + 1);
        let expected = reference_table();
        if doc[start..end] != expected && std::env::var_os("TACKLE_BLESS").is_some() {
            let written = format!("{}{}{}", &doc[..start], expected, &doc[end..]);
            std::fs::write(&path, written).expect("write docs/macro.md");
            return;
        }
        assert_eq!(
            doc[start..end],
            expected,
            "docs/macro.md's attribute table is not ATTRIBUTES: run TACKLE_BLESS=1 cargo test -p tackle-contract"
        );
    }
    #[test]
    fn a_words_default_in_the_spec_is_its_types_default() {
        fn default_of(set: &WordSet) -> &'static str {
            match set.type_name {
                "ExecutionMode" => ExecutionMode::default().as_str(),
                "Trust" => Trust::default().as_str(),
                "Sensitivity" => Sensitivity::default().as_str(),
                "SandboxKind" => SandboxKind::default().as_str(),
                other => panic!("{other} has no default"),
            }
        }
        let mut defaulted = 0;
        for a in ATTRIBUTES {
            if let InSpec::WordOr(_, word) = a.spec {
                let Form::Word(set) = a.form else {
                    panic!("{}: a default word for a form with no words", a.name)
                };
                assert_eq!(word, default_of(&set), "{}", a.name);
                assert_eq!(set.from_attribute(word), Some(word), "{}", a.name);
                defaulted += 1;
            }
        }
        assert_eq!(defaulted, 4);
    }

    /// The table's cells that the definition also states: a word attribute's value
    /// cell lists its words (as attributes spell them), a default word's cell is that
    /// word, and an attribute the spec holds as a flag defaults to false.
    #[test]
    fn the_tables_cells_agree_with_the_forms() {
        let cells = |text: &str| -> Vec<String> {
            let mut words: Vec<String> = text
                .split(r"\|")
                .map(|w| w.trim().trim_matches('`').to_owned())
                .collect();
            words.sort();
            words
        };
        for a in ATTRIBUTES {
            if let Form::Word(set) = a.form {
                let mut spellings = set.attribute_spellings();
                spellings.sort();
                assert_eq!(cells(a.value), spellings, "{}: the value cell", a.name);
            }
            if let InSpec::WordOr(_, word) = a.spec {
                assert_eq!(
                    a.default,
                    format!("`{}`", word.replace('-', "_")),
                    "{}: the default cell",
                    a.name
                );
            }
            if matches!(a.form, Form::Flag) {
                assert_eq!(a.default, "false", "{}: the default cell", a.name);
            }
        }
    }
}
