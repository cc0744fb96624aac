//! `#[derive(SkillState)]`: marks a struct as a skill's state after checking that its
//! serialized form has a deterministic order.

use proc_macro2::TokenStream;
use proc_macro2::{Ident, TokenTree};
use quote::quote;
use syn::{Data, DeriveInput, Fields};

/// Every `HashMap` / `HashSet` named anywhere in a type's tokens (generic arguments,
/// tuples, arrays and paths included).
fn hash_ordered(tokens: TokenStream, found: &mut Vec<Ident>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) if ident == "HashMap" || ident == "HashSet" => {
                found.push(ident)
            }
            TokenTree::Group(group) => hash_ordered(group.stream(), found),
            _ => {}
        }
    }
}

/// The `crate = "..."` of the struct's `#[skill_state(..)]` attributes, if any.
fn crate_path(input: &DeriveInput) -> syn::Result<Option<syn::Path>> {
    let mut path = None;
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("skill_state"))
    {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("crate") {
                return Err(meta.error(
                    "unknown `skill_state` attribute: the one there is `crate = \"::path::to::tackle\"`",
                ));
            }
            let text: syn::LitStr = meta.value()?.parse()?;
            let parsed = text.parse::<syn::Path>().map_err(|_| {
                syn::Error::new(
                    text.span(),
                    "`crate` takes the path of the tackle crate: crate = \"::my_reexport::tackle\"",
                )
            })?;
            path = Some(parsed);
            Ok(())
        })?;
    }
    Ok(path)
}

pub fn expand(input: DeriveInput) -> TokenStream {
    let name = &input.ident;
    let explicit = match crate_path(&input) {
        Ok(path) => path,
        Err(error) => return error.to_compile_error(),
    };
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => &fields.named,
            _ => {
                return syn::Error::new_spanned(
                    &input.ident,
                    "a skill state is a struct with named fields: each field is an output key",
                )
                .to_compile_error();
            }
        },
        _ => {
            return syn::Error::new_spanned(
                &input.ident,
                "a skill state is a struct with named fields: each field is an output key",
            )
            .to_compile_error();
        }
    };
    let mut errors = TokenStream::new();
    for field in fields {
        let ty = &field.ty;
        let mut found = Vec::new();
        hash_ordered(quote!(#ty), &mut found);
        for ident in found {
            let replacement = if ident == "HashMap" {
                "BTreeMap"
            } else {
                "BTreeSet"
            };
            let field_name = field
                .ident
                .as_ref()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let message = format!(
                "skill state field `{field_name}` uses `{}`, whose serialized order is not \
                 deterministic (replays and recorded states would differ run to run); use \
                 `std::collections::{replacement}`",
                ident
            );
            errors.extend(syn::Error::new(ident.span(), message).to_compile_error());
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let p = crate::krate::private(explicit.as_ref());
    quote! {
        impl #impl_generics #p::SkillState for #name #ty_generics #where_clause {}
    }
}
