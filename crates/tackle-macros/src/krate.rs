//! Where the `tackle` crate is, as the crate being compiled names it.
//!
//! Expansions refer to the runtime through one path, found here: the `crate = "..."`
//! attribute when given (for a crate that re-exports tackle), else the name the
//! caller's `Cargo.toml` gives the `tackle-rs` dependency, so a renamed dependency
//! (`tackle2 = { package = "tackle-rs", ... }`) works.
//!
//! The package is `tackle-rs` (the registry's `tackle` is another crate) and its
//! library is `tackle`: a dependency written `tackle-rs = "0.1"` is reached as
//! `::tackle`, a renamed one by its new name.

use proc_macro2::TokenStream;
use proc_macro_crate::{crate_name, FoundCrate};
use quote::{format_ident, quote};

/// The facade's package name on the crates registry.
const PACKAGE: &str = "tackle-rs";

/// The macro ABI's module in the facade: versioned, so that a macro and a facade of
/// different versions fail to meet rather than misread each other.
pub fn private(explicit: Option<&syn::Path>) -> TokenStream {
    let krate = path(explicit);
    quote!(#krate::__private_0_1)
}

/// The path to the `tackle` crate in the expansion.
pub fn path(explicit: Option<&syn::Path>) -> TokenStream {
    if let Some(path) = explicit {
        return quote!(#path);
    }
    match crate_name(PACKAGE) {
        // Not renamed: the dependency's name is the library's, `tackle`.
        Ok(FoundCrate::Name(name)) if name == PACKAGE.replace('-', "_") => quote!(::tackle),
        Ok(FoundCrate::Name(name)) => {
            let ident = format_ident!("{}", name);
            quote!(::#ident)
        }
        // The facade itself (its library declares `extern crate self as tackle`; its
        // examples reach it by its library's name), or a manifest that cannot be
        // read: the library's name.
        Ok(FoundCrate::Itself) | Err(_) => quote!(::tackle),
    }
}
