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

use tackle_contract::{
    attr, ExecutionMode, ReplayPolicy, ResultShaping, SandboxKind, Sensitivity, SideEffects, Trust,
    Words,
};

use crate::errors::Errors;
use crate::json;

/// Whether `#[tool]` has an attribute named `key` (the contract's `ATTRIBUTES`, which
/// the reference table is made from, say which).
fn known(key: &str) -> bool {
    tackle_contract::attribute(key).is_some()
}

/// A word-valued attribute: its value and where it was written.
#[derive(Clone, Copy, Debug)]
pub struct Word<T> {
    pub value: T,
    pub span: Span,
}

/// The parsed attributes, before they are checked against the function.
#[derive(Default)]
pub struct ToolAttrs {
    pub name: Option<LitStr>,
    pub namespace: Option<LitStr>,
    pub version: Option<LitStr>,
    pub side_effects: Option<Word<SideEffects>>,
    pub replay_policy: Option<Word<ReplayPolicy>>,
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
    pub execution_mode: Option<Word<ExecutionMode>>,
    pub needs_approval: bool,
    /// `needs_approval = predicate`: a function deciding per validated input.
    pub approval_when: Option<syn::Path>,
    pub timeout_ms: Option<u64>,
    pub max_result_tokens: Option<u32>,
    pub result_shaping: Option<Word<ResultShaping>>,
    pub secrets: Vec<LitStr>,
    pub trust: Option<Word<Trust>>,
    pub blocking: bool,
    pub sensitivity: Option<Word<Sensitivity>>,
    pub sandbox: Option<Word<SandboxKind>>,
    pub preferred_model: Option<LitStr>,
    pub defer_loading: bool,
    pub reveals_secrets: bool,
    pub params: Vec<(Ident, LitStr)>,
    /// `crate = "path"`: where the `tackle` crate is.
    pub krate: Option<syn::Path>,
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
        if !known(&key) {
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

impl ToolAttrs {
    fn set(&mut self, key: &str, span: Span, raw: Raw) -> syn::Result<()> {
        match key {
            attr::NAME => self.name = Some(lit_str(key, span, raw)?),
            attr::NAMESPACE => self.namespace = Some(lit_str(key, span, raw)?),
            attr::VERSION => self.version = Some(lit_str(key, span, raw)?),
            attr::DESCRIPTION => self.description = Some(lit_str(key, span, raw)?),
            attr::IDEMPOTENCY_KEY => self.idempotency_key = Some(lit_str(key, span, raw)?),
            attr::SIDE_EFFECTS => self.side_effects = Some(word(key, span, raw)?),
            attr::REPLAY_POLICY => self.replay_policy = Some(word(key, span, raw)?),
            attr::EXECUTION_MODE => self.execution_mode = Some(word(key, span, raw)?),
            attr::TRUST => self.trust = Some(word(key, span, raw)?),
            attr::RESULT_SHAPING => self.result_shaping = Some(word(key, span, raw)?),
            attr::REQUIRES_CAPABILITY => self.requires_capability = str_list(key, span, raw)?,
            attr::TAGS => self.tags = str_list(key, span, raw)?,
            attr::SECRETS => self.secrets = str_list(key, span, raw)?,
            attr::NEEDS_APPROVAL => match raw {
                Raw::Expr(Expr::Path(p)) => {
                    self.needs_approval = false;
                    self.approval_when = Some(p.path);
                }
                other => self.needs_approval = flag(key, span, other)?,
            },
            attr::BLOCKING => self.blocking = flag(key, span, raw)?,
            attr::DEFER_LOADING => self.defer_loading = flag(key, span, raw)?,
            attr::REVEALS_SECRETS => self.reveals_secrets = flag(key, span, raw)?,
            attr::SENSITIVITY => self.sensitivity = Some(word(key, span, raw)?),
            attr::SANDBOX => self.sandbox = Some(word(key, span, raw)?),
            attr::PREFERRED_MODEL => {
                let lit = lit_str(key, span, raw)?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`preferred_model` is a tier (\"fast\", \"balanced\", \"smart\") or a model's name, not empty",
                    ));
                }
                self.preferred_model = Some(lit);
            }
            attr::TIMEOUT_MS => self.timeout_ms = Some(int(key, span, raw)?),
            attr::MAX_RESULT_TOKENS => self.max_result_tokens = Some(int(key, span, raw)?),
            attr::COST_ESTIMATE => self.cost_estimate = Some(decimal(span, raw)?),
            attr::DEPRECATED => match raw {
                Raw::Expr(Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                })) => {
                    self.deprecated = true;
                    self.deprecation_note = Some(s);
                }
                other => self.deprecated = flag(key, span, other)?,
            },
            attr::INPUT_SCHEMA | attr::OUTPUT_SCHEMA => {
                let lit = lit_str(key, span, raw)?;
                let value = json::parse(&lit, &format!("`{key}`"))?;
                if !value.is_object() && !value.is_boolean() {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!("`{key}` must be a JSON Schema object"),
                    ));
                }
                if key == attr::INPUT_SCHEMA {
                    self.input_schema = Some(value);
                } else {
                    self.output_schema = Some(value);
                }
            }
            attr::EXAMPLES => self.examples = examples(span, raw)?,
            attr::PARAMS => self.params = params(span, raw)?,
            attr::CRATE => {
                let lit = lit_str(key, span, raw)?;
                self.krate = Some(lit.parse().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        "`crate` takes the path of the tackle crate: crate = \"::my_reexport::tackle\"",
                    )
                })?);
            }
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

fn word<T: Words>(key: &str, span: Span, raw: Raw) -> syn::Result<Word<T>> {
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
    match T::from_attribute(&spelling) {
        Some(value) => Ok(Word { value, span }),
        None => {
            let allowed: Vec<String> = T::ALL.iter().map(|v| v.attribute_spelling()).collect();
            Err(syn::Error::new(
                span,
                format!("`{key}` must be one of: {}", allowed.join(", ")),
            ))
        }
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
