//! Parsing `#[tool(...)]`'s arguments into [`ToolAttrs`]: each attribute is known by
//! the contract's table (`tackle_contract::ATTRIBUTES`) and read by the form the table
//! gives it, in one function (`read`).
//!
//! Every problem becomes a `syn::Error` at the offending token; parsing goes on after
//! an error so that one compile shows every mistake.

use proc_macro2::{Span, TokenStream};
use rust_decimal::Decimal;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, MetaNameValue, Token};

use tackle_contract::{attr, Attribute, Form, WordSet, Words};

use crate::errors::Errors;
use crate::json;

/// A word-valued attribute: its value and where it was written.
#[derive(Clone, Copy, Debug)]
pub struct Word<T> {
    pub value: T,
    pub span: Span,
}

/// An attribute's value, read by its [`Form`].
pub enum Value {
    /// `Form::Text`; also `FlagOrText`'s text.
    Text(LitStr),
    /// `Form::Texts`.
    Texts(Vec<LitStr>),
    /// `Form::Word`: the word (as the runtime spells it) and where it was written.
    Word(&'static str, Span),
    /// `Form::Flag`; also `FlagOrText`'s and `FlagOrPath`'s flag.
    Flag(bool),
    /// `Form::Path`; also `FlagOrPath`'s path.
    Path(syn::Path),
    /// `Form::Whole`.
    Whole(u64),
    /// `Form::Decimal`.
    Decimal(Decimal),
    /// `Form::Schema`.
    Schema(serde_json::Value),
    /// `Form::Examples`.
    Examples(Vec<(serde_json::Value, Option<serde_json::Value>)>),
    /// `Form::Params`.
    Params(Vec<(Ident, LitStr)>),
}

/// One attribute as written: which, and its value.
pub struct Given {
    /// The attribute, as the contract defines it.
    pub attribute: &'static Attribute,
    /// Its value, read by its form.
    pub value: Value,
}

/// The parsed attributes, before they are checked against the function: each known
/// attribute written once, in the order written, read by its form.
#[derive(Default)]
pub struct ToolAttrs {
    /// Every attribute written with a valid value.
    given: Vec<Given>,
    /// Every known attribute written, valid or not (a bad value is still "given").
    names: Vec<&'static str>,
}

impl ToolAttrs {
    /// The names of the attributes written, valid or not, in the order written.
    pub fn written_names(&self) -> &[&'static str] {
        &self.names
    }

    /// Whether the attribute was written, valid or not.
    pub fn written(&self, attribute: &Attribute) -> bool {
        self.names.contains(&attribute.name)
    }

    /// The attribute's value, when it was written with a valid one. Each accessor
    /// below reads one form's values: asked for another form, it is a bug of the
    /// macro's, not the user's (the value was read by the attribute's own form), so a
    /// debug build stops there.
    pub fn get(&self, attribute: &Attribute) -> Option<&Value> {
        self.given
            .iter()
            .find(|g| g.attribute.name == attribute.name)
            .map(|g| &g.value)
    }

    /// A text attribute's string (`FlagOrText`'s, when given as text).
    pub fn text(&self, attribute: &Attribute) -> Option<&LitStr> {
        debug_assert!(matches!(attribute.form, Form::Text | Form::FlagOrText));
        match self.get(attribute) {
            Some(Value::Text(lit)) => Some(lit),
            _ => None,
        }
    }

    /// A list-of-strings attribute's strings (none when absent).
    pub fn texts(&self, attribute: &Attribute) -> &[LitStr] {
        debug_assert!(matches!(attribute.form, Form::Texts));
        match self.get(attribute) {
            Some(Value::Texts(list)) => list,
            _ => &[],
        }
    }

    /// A flag: `false` when absent or when given a value instead of a flag.
    pub fn flag(&self, attribute: &Attribute) -> bool {
        debug_assert!(matches!(
            attribute.form,
            Form::Flag | Form::FlagOrText | Form::FlagOrPath
        ));
        matches!(self.get(attribute), Some(Value::Flag(true)))
    }

    /// A path attribute's path (`FlagOrPath`'s, when given as a path).
    pub fn path(&self, attribute: &Attribute) -> Option<&syn::Path> {
        debug_assert!(matches!(attribute.form, Form::Path | Form::FlagOrPath));
        match self.get(attribute) {
            Some(Value::Path(path)) => Some(path),
            _ => None,
        }
    }

    /// A word attribute's value as its enum.
    pub fn word<T: Words>(&self, attribute: &Attribute) -> Option<Word<T>> {
        debug_assert!(
            matches!(attribute.form, Form::Word(set) if set.type_name == T::SET.type_name)
        );
        match self.get(attribute) {
            Some(Value::Word(word, span)) => {
                T::from_attribute(word).map(|value| Word { value, span: *span })
            }
            _ => None,
        }
    }

    /// A JSON Schema attribute's schema.
    pub fn schema(&self, attribute: &Attribute) -> Option<&serde_json::Value> {
        debug_assert!(matches!(attribute.form, Form::Schema));
        match self.get(attribute) {
            Some(Value::Schema(schema)) => Some(schema),
            _ => None,
        }
    }

    /// `examples`: the inputs and outputs given (none when absent).
    pub fn examples(&self) -> &[(serde_json::Value, Option<serde_json::Value>)] {
        match self.get(&attr::EXAMPLES) {
            Some(Value::Examples(list)) => list,
            _ => &[],
        }
    }

    /// `params(...)`: the descriptions given (none when absent).
    pub fn params(&self) -> &[(Ident, LitStr)] {
        match self.get(&attr::PARAMS) {
            Some(Value::Params(list)) => list,
            _ => &[],
        }
    }

    /// `crate = "..."`: where the `tackle` crate is, when given.
    pub fn krate(&self) -> Option<&syn::Path> {
        self.path(&attr::CRATE)
    }
}

/// An attribute's value as written, before it is read by its form.
enum Raw {
    Flag,
    Expr(Expr),
    Group(TokenStream),
}

/// Parses the attribute arguments. Returns the attributes and every error found.
pub fn parse(args: TokenStream) -> (ToolAttrs, Errors) {
    let mut attrs = ToolAttrs::default();
    let mut errors = Errors::new();
    let parser = syn::meta::parser(|meta| {
        let span = meta.path.span();
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_else(|| path_text(&meta.path));
        let raw = raw_value(&meta)?;
        match tackle_contract::attribute(&key) {
            None => errors.push(unknown(&key, span)),
            Some(attribute) if attrs.names.contains(&attribute.name) => errors.push(
                syn::Error::new(span, format!("`{key}` is given twice; keep one")),
            ),
            Some(attribute) => {
                attrs.names.push(attribute.name);
                match read(attribute, span, raw) {
                    Ok(value) => attrs.given.push(Given { attribute, value }),
                    Err(e) => errors.push(e),
                }
            }
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(args) {
        errors.push(e);
    }
    (attrs, errors)
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn raw_value(meta: &ParseNestedMeta) -> syn::Result<Raw> {
    if meta.input.peek(Token![=]) {
        Ok(Raw::Expr(meta.value()?.parse()?))
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        Ok(Raw::Group(content.parse()?))
    } else {
        Ok(Raw::Flag)
    }
}

fn unknown(key: &str, span: Span) -> syn::Error {
    let names = tackle_contract::ATTRIBUTES.iter().map(|a| a.name);
    let closest = names
        .clone()
        .map(|k| (strsim::damerau_levenshtein(key, k), k))
        .min()
        .filter(|(d, k)| *d <= (k.len() / 3).max(2));
    let hint = match closest {
        Some((_, k)) => format!("did you mean `{k}`?"),
        None => format!("expected one of: {}", names.collect::<Vec<_>>().join(", ")),
    };
    syn::Error::new(span, format!("unknown attribute `{key}`; {hint}"))
}

/// Reads an attribute's value by its form: the one place a form becomes a value.
fn read(attribute: &Attribute, span: Span, raw: Raw) -> syn::Result<Value> {
    let key = attribute.name;
    Ok(match attribute.form {
        Form::Text => Value::Text(lit_str(key, span, raw)?),
        Form::Texts => Value::Texts(str_list(key, span, raw)?),
        Form::Word(set) => {
            let (word, span) = word(key, &set, span, raw)?;
            Value::Word(word, span)
        }
        Form::Flag => Value::Flag(flag(key, span, raw)?),
        Form::FlagOrText => match raw {
            Raw::Expr(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) => Value::Text(s),
            other => Value::Flag(flag(key, span, other)?),
        },
        Form::FlagOrPath => match raw {
            Raw::Expr(Expr::Path(p)) => Value::Path(p.path),
            other => Value::Flag(flag(key, span, other)?),
        },
        Form::Whole { max } => Value::Whole(whole(key, span, raw, max)?),
        Form::Decimal => Value::Decimal(decimal(key, span, raw)?),
        Form::Schema => {
            let lit = lit_str(key, span, raw)?;
            let value = json::parse(&lit, &format!("`{key}`"))?;
            if !value.is_object() && !value.is_boolean() {
                return Err(syn::Error::new(
                    lit.span(),
                    format!("`{key}` must be a JSON Schema object"),
                ));
            }
            Value::Schema(value)
        }
        Form::Examples => Value::Examples(examples(span, raw)?),
        Form::Params => Value::Params(params(span, raw)?),
        Form::Path => {
            let lit = lit_str(key, span, raw)?;
            Value::Path(lit.parse().map_err(|_| {
                syn::Error::new(
                    lit.span(),
                    format!("`{key}` takes the path of the tackle crate: {key} = \"::my_reexport::tackle\""),
                )
            })?)
        }
    })
}

fn expected(key: &str, span: Span, what: &str) -> syn::Error {
    syn::Error::new(span, format!("`{key}` takes {what}"))
}

fn lit_str(key: &str, span: Span, raw: Raw) -> syn::Result<LitStr> {
    match raw {
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => Ok(s),
        Raw::Expr(e) => Err(syn::Error::new(
            e.span(),
            format!("`{key}` takes a string literal: {key} = \"...\""),
        )),
        _ => Err(expected(
            key,
            span,
            &format!("a string literal: {key} = \"...\""),
        )),
    }
}

fn word(key: &str, set: &WordSet, span: Span, raw: Raw) -> syn::Result<(&'static str, Span)> {
    let (spelling, span) = match raw {
        Raw::Expr(Expr::Path(p)) if p.path.get_ident().is_some() => (
            p.path.get_ident().map(Ident::to_string).unwrap_or_default(),
            p.span(),
        ),
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => (s.value(), s.span()),
        Raw::Expr(e) => (String::new(), e.span()),
        _ => (String::new(), span),
    };
    match set.from_attribute(&spelling) {
        Some(word) => Ok((word, span)),
        None => Err(syn::Error::new(
            span,
            format!(
                "`{key}` must be one of: {}",
                set.attribute_spellings().join(", ")
            ),
        )),
    }
}

fn str_list(key: &str, span: Span, raw: Raw) -> syn::Result<Vec<LitStr>> {
    let not_a_string = |e: &Expr| {
        syn::Error::new(
            e.span(),
            format!("`{key}` takes strings: {key} = [\"a\", \"b\"]"),
        )
    };
    match raw {
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => Ok(vec![s]),
        Raw::Expr(Expr::Array(array)) => array
            .elems
            .into_iter()
            .map(|e| match e {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Ok(s),
                other => Err(not_a_string(&other)),
            })
            .collect(),
        Raw::Expr(e) => Err(not_a_string(&e)),
        _ => Err(expected(
            key,
            span,
            &format!("a string or a list of strings: {key} = [\"a\", \"b\"]"),
        )),
    }
}

fn flag(key: &str, span: Span, raw: Raw) -> syn::Result<bool> {
    match raw {
        Raw::Flag => Ok(true),
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        })) => Ok(b.value),
        _ => Err(expected(
            key,
            span,
            &format!("no value, or `true` / `false`: `{key}` or `{key} = false`"),
        )),
    }
}

fn whole(key: &str, span: Span, raw: Raw, max: u64) -> syn::Result<u64> {
    match raw {
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        })) => {
            // Wide enough for any literal a `u64` field could be given, so every
            // number too large gets the same message.
            let n: u128 = i.base10_parse()?;
            match u64::try_from(n) {
                Ok(n) if n <= max => Ok(n),
                _ => Err(syn::Error::new(
                    i.span(),
                    format!("`{key}` is at most {max}"),
                )),
            }
        }
        Raw::Expr(e) => Err(syn::Error::new(
            e.span(),
            format!("`{key}` takes a whole number: {key} = 500"),
        )),
        _ => Err(expected(key, span, &format!("a whole number: {key} = 500"))),
    }
}

fn decimal(key: &str, span: Span, raw: Raw) -> syn::Result<Decimal> {
    match raw {
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Str(s), .. })) => Decimal::from_str_exact(s.value().trim())
            .map_err(|e| syn::Error::new(s.span(), format!("`{key}` is not a decimal number ({e}): write it like \"0.25\""))),
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Float(f), .. })) => Err(syn::Error::new(
            f.span(),
            format!("`{key}` must be a decimal string, never a float (money is exact): write {key} = \"{f}\""),
        )),
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Int(i), .. })) => Err(syn::Error::new(
            i.span(),
            format!("`{key}` must be a decimal string: write {key} = \"{}\"", i.base10_digits()),
        )),
        Raw::Expr(e) => Err(syn::Error::new(e.span(), format!("`{key}` takes a decimal string: {key} = \"0.25\""))),
        _ => Err(expected(key, span, &format!("a decimal string: {key} = \"0.25\""))),
    }
}

fn examples(
    span: Span,
    raw: Raw,
) -> syn::Result<Vec<(serde_json::Value, Option<serde_json::Value>)>> {
    const FORM: &str = "`examples` takes a list of JSON strings, each an input or an (input, output) pair: examples = [r#\"{\"a\": 1}\"#, (r#\"{\"a\": 2}\"#, \"2\")]";
    let elems = match raw {
        Raw::Expr(Expr::Array(a)) => a.elems,
        Raw::Expr(e) => return Err(syn::Error::new(e.span(), FORM)),
        _ => return Err(syn::Error::new(span, FORM)),
    };
    let json_lit = |e: &Expr, what: &str| match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => json::parse(s, what),
        other => Err(syn::Error::new(other.span(), FORM)),
    };
    elems
        .iter()
        .map(|e| {
            let (input, output) = match e {
                Expr::Tuple(t) if t.elems.len() == 2 => (
                    json_lit(&t.elems[0], "the example input")?,
                    Some(json_lit(&t.elems[1], "the example output")?),
                ),
                Expr::Paren(p) => (json_lit(&p.expr, "the example input")?, None),
                other => (json_lit(other, "the example input")?, None),
            };
            if !input.is_object() {
                return Err(syn::Error::new(
                    e.span(),
                    "an example input must be a JSON object of arguments",
                ));
            }
            Ok((input, output))
        })
        .collect()
}

fn params(span: Span, raw: Raw) -> syn::Result<Vec<(Ident, LitStr)>> {
    const FORM: &str =
        "`params` takes descriptions by parameter name: params(a = \"left operand\", b = \"...\")";
    let Raw::Group(tokens) = raw else {
        return Err(syn::Error::new(span, FORM));
    };
    let list = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse2(tokens)?;
    list.into_iter()
        .map(|nv| {
            let ident = nv
                .path
                .get_ident()
                .cloned()
                .ok_or_else(|| syn::Error::new(nv.path.span(), FORM))?;
            match nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Ok((ident, s)),
                other => Err(syn::Error::new(other.span(), FORM)),
            }
        })
        .collect()
}
