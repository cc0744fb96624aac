//! JSON literals in attributes: parsed at compile time, emitted as code that builds
//! the same `serde_json::Value` (so nothing is parsed, or can fail, at run time).

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use serde_json::Value;
use syn::LitStr;

/// Parses a string literal as JSON, or a compile error at the literal with the
/// parser's line and column.
pub fn parse(lit: &LitStr, what: &str) -> syn::Result<Value> {
    serde_json::from_str(&lit.value())
        .map_err(|e| syn::Error::new(lit.span(), format!("{what} is not valid JSON: {e}")))
}

/// Code that builds `value`.
pub fn to_tokens(p: &TokenStream, value: &Value) -> TokenStream {
    match value {
        Value::Null => quote!(#p::serde_json::Value::Null),
        Value::Bool(b) => quote!(#p::serde_json::Value::Bool(#b)),
        Value::Number(n) => {
            let lit = if let Some(i) = n.as_i64() {
                Literal::i64_suffixed(i)
            } else if let Some(u) = n.as_u64() {
                Literal::u64_suffixed(u)
            } else {
                Literal::f64_suffixed(n.as_f64().unwrap_or_default())
            };
            quote!(#p::serde_json::Value::from(#lit))
        }
        Value::String(s) => quote!(#p::serde_json::Value::String(::std::string::String::from(#s))),
        Value::Array(items) => {
            let items = items.iter().map(|item| to_tokens(p, item));
            quote!(#p::serde_json::Value::Array(::std::vec![#(#items),*]))
        }
        Value::Object(map) => {
            let entries = map.iter().map(|(k, v)| {
                let v = to_tokens(p, v);
                quote!((#k, #v))
            });
            quote!(#p::object([#(#entries),*]))
        }
    }
}
