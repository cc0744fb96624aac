//! What an attribute of `#[tool]` is: its name, the [`Form`] its value takes, where
//! the static spec holds it ([`InSpec`]), the identity fields the macro settles
//! ([`Settled`]), and the cells of its row in the reference table.

use crate::words::WordSet;

/// One attribute of `#[tool]`: its name, the form its value takes, where the tool's
/// static spec holds it, and the cells of its row in the reference table (Markdown).
/// Defined once, in [`attr`]: the macro's parser reads a value by its [`Form`], the
/// macro fills the static spec's fields by its [`InSpec`], and the reference table in
/// `docs/macro.md` is [`reference_table`].
///
/// [`attr`]: crate::attr
/// [`reference_table`]: crate::reference_table
#[derive(Clone, Copy, Debug)]
pub struct Attribute {
    /// The attribute's name (`side_effects`).
    pub name: &'static str,
    /// How its value is written: what the parser accepts.
    pub form: Form,
    /// Which field of the static spec holds it, and what that field holds without it.
    pub spec: InSpec,
    /// How it is written, as the table's first cell shows it (Markdown).
    pub written: &'static str,
    /// What it takes (Markdown).
    pub value: &'static str,
    /// Its default (Markdown).
    pub default: &'static str,
    /// What it means (Markdown).
    pub meaning: &'static str,
}

/// How an attribute's value is written, which is how the macro reads it.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    /// A string literal: `name = "add"`.
    Text,
    /// A string literal or a list of them: `tags = ["math", "fast"]`.
    Texts,
    /// One word of a set, bare or quoted, `_` for `-`: `side_effects = write`.
    Word(WordSet),
    /// The attribute alone, or `= true` / `= false`: `blocking`.
    Flag,
    /// A flag, or a string literal instead: `deprecated = "use add2"`.
    FlagOrText,
    /// A flag, or the path of a function instead: `needs_approval = is_large`.
    FlagOrPath,
    /// A whole number no larger than `max`: `timeout_ms = 500`.
    Whole {
        /// The largest value the spec's field holds.
        max: u64,
    },
    /// A decimal number as a string, never a float: `cost_estimate = "0.25"`.
    Decimal,
    /// A JSON Schema object as a string: `input_schema = r#"{...}"#`.
    Schema,
    /// A list of JSON strings, each an input or an (input, output) pair.
    Examples,
    /// Descriptions by parameter name: `params(a = "...", b = "...")`.
    Params,
    /// A Rust path as a string: `crate = "::my_framework::tackle"`.
    Path,
}

/// Where a tool's static spec holds an attribute, and what it holds without it.
#[derive(Clone, Copy, Debug)]
pub enum InSpec {
    /// Nowhere: the attribute shapes the expansion itself (schemas, examples,
    /// parameter descriptions, the crate's path).
    No,
    /// The field of this name: what was written, or when the attribute is absent its
    /// form's nothing (`None`, `false`, `&[]`).
    Field(&'static str),
    /// The field of this name: what was written; a tool without it does not compile.
    Required(&'static str),
    /// The field of this name: the word written, or this default word.
    WordOr(&'static str, &'static str),
    /// A field of the tool's identity, always filled: what was written, or what the
    /// macro finds (the function's name, the crate's, the doc comment's first
    /// paragraph).
    Settled(Settled),
    /// A flag field (`flag`), and a field (`value`) for the value the attribute may take
    /// instead of a flag; when that value is given the flag is `set`.
    FlagAnd {
        /// The flag's field.
        flag: &'static str,
        /// The field of the value given instead of a flag.
        value: &'static str,
        /// The flag when the value is given.
        set: bool,
    },
}

/// The fields of a tool's identity that the macro settles when their attribute is
/// absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// `name`: the function's name.
    Name,
    /// `namespace`: the crate's name.
    Namespace,
    /// `version`: `"1"`.
    Version,
    /// `description`: the doc comment's first paragraph.
    Description,
}

impl Settled {
    /// The static spec's field.
    pub const fn field(self) -> &'static str {
        match self {
            Settled::Name => "name",
            Settled::Namespace => "namespace",
            Settled::Version => "version",
            Settled::Description => "description",
        }
    }
}
