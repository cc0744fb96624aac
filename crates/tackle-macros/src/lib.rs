//! The `#[tool]` attribute of tackle. Use it through the `tackle` crate, which
//! re-exports it and provides the paths its expansion refers to; the full reference,
//! with every attribute and every compile error, is `docs/macro.md`.
//!
//! The macro parses its arguments into a small model (`attrs`), analyses the
//! function's signature (`sig`), checks the two against each other, and only then
//! expands. Every mistake is a compile error at the offending token, and all of them
//! are reported in one go.

#![warn(missing_docs)]

mod attrs;
mod docs;
mod expand;
mod json;
mod sig;

use proc_macro::TokenStream;

/// Turns a plain function into a registered, validated tool.
///
/// ```text
/// /// Add two integers.
/// #[tool(namespace = "math", version = "1", side_effects = none)]
/// fn add(/// left operand
///        a: i64,
///        /// right operand
///        b: i64) -> i64 { a + b }
/// ```
///
/// The function stays callable as written; `add::KEY` and `add::spec()` are added,
/// and the tool registers itself at link time. See `docs/macro.md`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match syn::parse::<syn::ItemFn>(item) {
        Ok(func) => func,
        Err(e) => {
            let message = format!("#[tool] goes on a function: {e}");
            return syn::Error::new(e.span(), message).to_compile_error().into();
        }
    };
    expand::expand(args.into(), func).into()
}
