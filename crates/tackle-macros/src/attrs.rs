//! Parsing `#[tool(...)]`'s arguments into [`ToolAttrs`].
//!
//! Every problem becomes a `syn::Error` at the offending token; parsing goes on after
//! an error so that one compile shows every mistake.

use proc_macro2::{Span, TokenStream};
use rust_decimal::Decimal;
use serde_json::Value;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, MetaNameValue, Token};

use crate::json;

/// Every attribute `#[tool]` accepts.
pub const KNOWN: &[&str] = &[
    "name",
    "namespace",
    "version",
    "side_effects",
    "replay_policy",
    "requires_capability",
    "description",
    "idempotency_key",
    "cost_estimate",
    "tags",
    "examples",
    "deprecated",
    "input_schema",
    "output_schema",
    "execution_mode",
    "needs_approval",
    "timeout_ms",
    "max_result_tokens",
    "result_shaping",
    "secrets",
    "trust",
    "blocking",
    "params",
];

/// A word-valued attribute: the word as written (with `-` read as `_`) and its span.
#[derive(Clone, Debug)]
pub struct Word {
    pub value: String,
    pub span: Span,
}

/// The parsed attributes, before they are checked against the function.
#[derive(Default)]
pub struct ToolAttrs {
    pub name: Option<LitStr>,
    pub namespace: Option<LitStr>,
    pub version: Option<LitStr>,
    pub side_effects: Option<Word>,
    pub replay_policy: Option<Word>,
    pub requires_capability: Vec<LitStr>,
    pub description: Option<LitStr>,
    pub idempotency_key: Option<LitStr>,
    pub cost_estimate: Option<Decimal>,
    pub tags: Vec<LitStr>,
    pub examples: Vec<(Value, Option<Value>)>,
    pub deprecated: bool,
    pub deprecation_note: Option<LitStr>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub execution_mode: Option<Word>,
    pub needs_approval: bool,
    /// `needs_approval = predicate`: a function deciding per validated input.
    pub approval_when: Option<syn::Path>,
    pub timeout_ms: Option<u64>,
    pub max_result_tokens: Option<u32>,
    pub result_shaping: Option<Word>,
    pub secrets: Vec<LitStr>,
    pub trust: Option<Word>,
    pub blocking: bool,
    pub params: Vec<(Ident, LitStr)>,
    /// Every known attribute that was written, valid or not.
    pub given: Vec<String>,
}

/// An attribute's value as written, before it is interpreted.
enum Raw {
    Flag,
    Expr(Expr),
    Group(TokenStream),
}

/// Parses the attribute arguments. Returns the attributes and every error found.
pub fn parse(args: TokenStream) -> (ToolAttrs, Vec<syn::Error>) {
    let mut attrs = ToolAttrs::default();
    let mut errors = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let span = meta.path.span();
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_else(|| path_text(&meta.path));
        let raw = raw_value(&meta)?;
        if !KNOWN.contains(&key.as_str()) {
            errors.push(unknown(&key, span));
        } else if attrs.given.contains(&key) {
            errors.push(syn::Error::new(
                span,
                format!("`{key}` is given twice; keep one"),
            ));
        } else {
            attrs.given.push(key.clone());
            if let Err(e) = attrs.set(&key, span, raw) {
                errors.push(e);
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
    let closest = KNOWN
        .iter()
        .map(|k| (strsim::damerau_levenshtein(key, k), *k))
        .min()
        .filter(|(d, k)| *d <= (k.len() / 3).max(2));
    let hint = match closest {
        Some((_, k)) => format!("did you mean `{k}`?"),
        None => format!("expected one of: {}", KNOWN.join(", ")),
    };
    syn::Error::new(span, format!("unknown attribute `{key}`; {hint}"))
}

impl ToolAttrs {
    fn set(&mut self, key: &str, span: Span, raw: Raw) -> syn::Result<()> {
        match key {
            "name" => self.name = Some(lit_str(key, span, raw)?),
            "namespace" => self.namespace = Some(lit_str(key, span, raw)?),
            "version" => self.version = Some(lit_str(key, span, raw)?),
            "description" => self.description = Some(lit_str(key, span, raw)?),
            "idempotency_key" => self.idempotency_key = Some(lit_str(key, span, raw)?),
            "side_effects" => {
                self.side_effects = Some(word(
                    key,
                    span,
                    raw,
                    &["none", "read", "write", "external"],
                )?)
            }
            "replay_policy" => {
                self.replay_policy = Some(word(
                    key,
                    span,
                    raw,
                    &["must_stub", "fail_loud", "recorded_result"],
                )?)
            }
            "execution_mode" => {
                self.execution_mode =
                    Some(word(key, span, raw, &["auto", "parallel", "sequential"])?)
            }
            "trust" => {
                self.trust = Some(word(
                    key,
                    span,
                    raw,
                    &["first_party", "trusted", "untrusted", "mcp"],
                )?)
            }
            "requires_capability" => self.requires_capability = str_list(key, span, raw)?,
            "tags" => self.tags = str_list(key, span, raw)?,
            "result_shaping" => {
                self.result_shaping = Some(word(
                    key,
                    span,
                    raw,
                    &["middle", "tail", "spill_to_file", "summarize"],
                )?)
            }
            "secrets" => self.secrets = str_list(key, span, raw)?,
            "needs_approval" => match raw {
                Raw::Expr(Expr::Path(p)) => {
                    self.needs_approval = false;
                    self.approval_when = Some(p.path);
                }
                other => self.needs_approval = flag(key, span, other)?,
            },
            "blocking" => self.blocking = flag(key, span, raw)?,
            "timeout_ms" => self.timeout_ms = Some(int(key, span, raw)?),
            "max_result_tokens" => self.max_result_tokens = Some(int(key, span, raw)?),
            "cost_estimate" => self.cost_estimate = Some(decimal(span, raw)?),
            "deprecated" => match raw {
                Raw::Expr(Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                })) => {
                    self.deprecated = true;
                    self.deprecation_note = Some(s);
                }
                other => self.deprecated = flag(key, span, other)?,
            },
            "input_schema" | "output_schema" => {
                let lit = lit_str(key, span, raw)?;
                let value = json::parse(&lit, &format!("`{key}`"))?;
                if !value.is_object() && !value.is_boolean() {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!("`{key}` must be a JSON Schema object"),
                    ));
                }
                if key == "input_schema" {
                    self.input_schema = Some(value);
                } else {
                    self.output_schema = Some(value);
                }
            }
            "examples" => self.examples = examples(span, raw)?,
            "params" => self.params = params(span, raw)?,
            _ => return Err(unknown(key, span)),
        }
        Ok(())
    }
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

fn word(key: &str, span: Span, raw: Raw, allowed: &[&str]) -> syn::Result<Word> {
    let (value, span) = match raw {
        Raw::Expr(Expr::Path(p)) if p.path.get_ident().is_some() => (
            p.path.get_ident().map(Ident::to_string).unwrap_or_default(),
            p.span(),
        ),
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => (s.value().replace('-', "_"), s.span()),
        Raw::Expr(e) => (String::new(), e.span()),
        _ => (String::new(), span),
    };
    if allowed.contains(&value.as_str()) {
        Ok(Word { value, span })
    } else {
        Err(syn::Error::new(
            span,
            format!("`{key}` must be one of: {}", allowed.join(", ")),
        ))
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

fn int<T: std::str::FromStr>(key: &str, span: Span, raw: Raw) -> syn::Result<T>
where
    T::Err: std::fmt::Display,
{
    match raw {
        Raw::Expr(Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        })) => i.base10_parse(),
        Raw::Expr(e) => Err(syn::Error::new(
            e.span(),
            format!("`{key}` takes a whole number: {key} = 500"),
        )),
        _ => Err(expected(key, span, &format!("a whole number: {key} = 500"))),
    }
}

fn decimal(span: Span, raw: Raw) -> syn::Result<Decimal> {
    match raw {
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Str(s), .. })) => Decimal::from_str_exact(s.value().trim())
            .map_err(|e| syn::Error::new(s.span(), format!("`cost_estimate` is not a decimal number ({e}): write it like \"0.25\""))),
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Float(f), .. })) => Err(syn::Error::new(
            f.span(),
            format!("`cost_estimate` must be a decimal string, never a float (money is exact): write cost_estimate = \"{f}\""),
        )),
        Raw::Expr(Expr::Lit(ExprLit { lit: Lit::Int(i), .. })) => Err(syn::Error::new(
            i.span(),
            format!("`cost_estimate` must be a decimal string: write cost_estimate = \"{}\"", i.base10_digits()),
        )),
        Raw::Expr(e) => Err(syn::Error::new(e.span(), "`cost_estimate` takes a decimal string: cost_estimate = \"0.25\"")),
        _ => Err(expected("cost_estimate", span, "a decimal string: cost_estimate = \"0.25\"")),
    }
}

fn examples(span: Span, raw: Raw) -> syn::Result<Vec<(Value, Option<Value>)>> {
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
