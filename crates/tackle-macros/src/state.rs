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

pub fn expand(input: DeriveInput) -> TokenStream {
    let name = &input.ident;
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
    let krate = crate::krate::path(None);
    quote! {
        impl #impl_generics #krate::__private::SkillState for #name #ty_generics #where_clause {}
    }
}
