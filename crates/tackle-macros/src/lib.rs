//! The `#[tool]` attribute and the `SkillState` derive of tackle. Use it through the `tackle` crate, which
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
mod errors;
mod expand;
mod json;
mod krate;
mod sig;
mod state;
mod toolset;

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
    // A method of a `#[tools]` impl block, which made its tool already.
    if args.to_string() == toolset::IN_TOOLSET {
        return item;
    }
    let func = match syn::parse::<syn::ItemFn>(item) {
        Ok(func) => func,
        Err(e) => {
            let message = format!("#[tool] goes on a function: {e}");
            return syn::Error::new(e.span(), message).to_compile_error().into();
        }
    };
    expand::expand(args.into(), func).into()
}

/// Makes the `#[tool]` methods of an `impl` block the tools of a toolset: a value that
/// holds them and their state, added to a registry at run time.
///
/// ```text
/// struct Bank { ledger: Ledger }
///
/// #[tools(namespace = "bank")]
/// impl Bank {
///     /// An account's balance, in cents.
///     #[tool(side_effects = read)]
///     fn balance(&self, account: String) -> u64 { self.ledger.balance(&account) }
/// }
///
/// let runtime = Runtime::from_inventory()?.with_toolset(Bank { ledger })?;
/// ```
///
/// Each tool method takes `&self` and is written as a `#[tool]` function is (the same
/// attributes, parameters and compile errors); `#[tools(...)]` takes only the defaults
/// `namespace` and `version`, and `crate`. `Bank::TOOLS` lists the keys, and
/// `Bank::BALANCE_KEY` is one. See `docs/macro.md`.
#[proc_macro_attribute]
pub fn tools(args: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse::<syn::ItemImpl>(item) {
        Ok(imp) => toolset::expand(args.into(), imp).into(),
        Err(e) => {
            let message = format!("#[tools] goes on an impl block: {e}");
            syn::Error::new(e.span(), message).to_compile_error().into()
        }
    }
}

/// Marks a struct as a skill's state (`tackle::agent::skill`): its fields are the
/// skill's output keys. Fields using `HashMap` or `HashSet`, anywhere in their type,
/// are compile errors, because their serialized order changes from run to run.
///
/// ```text
/// #[derive(Serialize, Deserialize, JsonSchema, SkillState)]
/// struct Trip { destination: String, legs: Vec<String> }
/// ```
///
/// A crate that reaches tackle through a re-export names it, as with `#[tool]`:
/// `#[skill_state(crate = "::my_reexport::tackle")]`.
#[proc_macro_derive(SkillState, attributes(skill_state))]
pub fn skill_state(item: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(item) {
        Ok(input) => state::expand(input).into(),
        Err(e) => e.to_compile_error().into(),
    }
}
