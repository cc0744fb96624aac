//! `#[tools]` on an `impl` block: its `#[tool]` methods taking `&self` become the tools
//! of a toolset, a value that holds them and their state.
//!
//! The impl block stays as written (the `#[tool]` attributes and the parameters'
//! doc comments removed); beside it come the keys (`TOOLS`, and one `<METHOD>_KEY` per
//! tool) and the `Toolset` impl, whose `bound_tools` makes each tool bound to the
//! value, with the code a `#[tool]` function gets (see `expand`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemImpl};

use tackle_contract::attr;

use crate::attrs::{self, ToolAttrs};
use crate::errors::Errors;
use crate::expand;
use crate::krate;

/// The argument of the `#[tool]` a `#[tools]` impl block leaves on each tool method.
pub const IN_TOOLSET: &str = "__in_toolset";

/// Whether `attr` is `#[tool(...)]` (by any path ending in `tool`).
fn is_tool(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "tool")
}

/// The impl-level arguments: defaults of every tool's `namespace` and `version`, and
/// `crate`. Anything else is an error: the rest belongs on each method.
fn impl_args(args: TokenStream, errors: &mut Errors) -> (ToolAttrs, TokenStream) {
    let (attrs, parse_errors) = attrs::parse(args.clone());
    if let Some(error) = parse_errors.finish() {
        errors.push(error);
    }
    for written in attrs.written_names() {
        if ![attr::NAMESPACE.name, attr::VERSION.name, attr::CRATE.name].contains(written) {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!(
                    "`{written}` goes on each `#[tool]` method; `#[tools(...)]` takes only `namespace`, `version` and `crate`, the defaults of its tools"
                ),
            ));
        }
    }
    (attrs, args)
}

/// The arguments of one method's `#[tool(...)]`, with the impl's `namespace`, `version`
/// and `crate` added where the method does not set them.
fn method_args(defaults: &ToolAttrs, own: TokenStream) -> TokenStream {
    let (mine, errors) = attrs::parse(own.clone());
    // Its own errors are reported when the arguments are parsed again, below.
    drop(errors.finish());
    let mut extra = Vec::new();
    for attribute in [&attr::NAMESPACE, &attr::VERSION] {
        if let (Some(lit), false) = (defaults.text(attribute), mine.written(attribute)) {
            let name = format_ident!("{}", attribute.name);
            extra.push(quote!(#name = #lit));
        }
    }
    if let (Some(path), false) = (defaults.krate(), mine.written(&attr::CRATE)) {
        let text = quote!(#path).to_string().replace(' ', "");
        extra.push(quote!(crate = #text));
    }
    if extra.is_empty() {
        return own;
    }
    if own.is_empty() {
        quote!(#(#extra),*)
    } else {
        quote!(#(#extra,)* #own)
    }
}

/// Checks that a tool method takes `&self`.
fn check_receiver(method: &syn::ImplItemFn, errors: &mut Errors) {
    match method.sig.receiver() {
        Some(syn::Receiver {
            kind: syn::ReceiverKind::Reference(_, _, None),
            ..
        }) => {}
        Some(
            r @ syn::Receiver {
                kind: syn::ReceiverKind::Reference(_, _, Some(_)),
                ..
            },
        ) => errors.push(syn::Error::new(
            r.span(),
            "a tool method takes `&self`, not `&mut self`: calls run at once and share the value; keep what changes behind a `Mutex` or an atomic",
        )),
        Some(r) => errors.push(syn::Error::new(
            r.span(),
            "a tool method takes `&self`: the toolset's value is shared by every call (write `&self`, not `self` or a typed `self`)",
        )),
        None => errors.push(syn::Error::new(
            method.sig.ident.span(),
            "a `#[tool]` in a `#[tools]` impl block is a method taking `&self`; a function without `self` is a free `#[tool]` function: move it out of the impl block",
        )),
    }
}

/// Expands `#[tools(args)] impl Type { ... }`.
pub fn expand(args: TokenStream, mut imp: ItemImpl) -> TokenStream {
    let mut errors = Errors::new();
    let (defaults, _) = impl_args(args, &mut errors);
    if let Some((path, _)) = &imp.trait_ {
        errors.push(syn::Error::new(
            path.span(),
            "`#[tools]` goes on an inherent impl block (`impl MyTools { ... }`), not on a trait's impl",
        ));
    }
    if !imp.generics.params.is_empty() || imp.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            imp.generics.span(),
            "a toolset cannot be generic: its tools' schemas need concrete types; write the impl block for one type",
        ));
    }
    let self_ty = (*imp.self_ty).clone();
    let mut tools = Vec::new();
    for item in imp.items.iter_mut() {
        let ImplItem::Fn(method) = item else { continue };
        let Some(at) = method.attrs.iter().position(is_tool) else {
            continue;
        };
        // The attribute stays, as a marker its own macro passes over: so `#[tool]`
        // resolves (and its import is used) as written.
        let path = method.attrs[at].path().clone();
        let attribute = std::mem::replace(
            &mut method.attrs[at],
            syn::parse_quote!(#[#path(__in_toolset)]),
        );
        let own = match attribute.meta {
            syn::Meta::List(list) => list.tokens,
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::NameValue(nv) => {
                errors.push(syn::Error::new(
                    nv.span(),
                    "write `#[tool(...)]` with the tool's attributes in parentheses",
                ));
                continue;
            }
        };
        let (attrs, mut method_errors) = attrs::parse(method_args(&defaults, own));
        check_receiver(method, &mut method_errors);
        let made = expand::expand_method(&attrs, &mut method_errors, method, &self_ty);
        match (method_errors.finish(), made) {
            (None, Some((key, block))) => tools.push((method.sig.ident.clone(), key, block)),
            (Some(error), _) => errors.push(error),
            (None, None) => {}
        }
    }
    if tools.is_empty() && errors.is_empty() {
        errors.push(syn::Error::new(
            imp.self_ty.span(),
            "this `#[tools]` impl block has no `#[tool]` method: mark the methods that are tools with `#[tool(side_effects = ...)]`",
        ));
    }
    if let Some(error) = errors.finish() {
        let error = error.to_compile_error();
        return quote!(#error #imp);
    }
    let p = krate::private(defaults.krate());
    let keys: Vec<&String> = tools.iter().map(|(_, key, _)| key).collect();
    let consts = tools.iter().map(|(ident, key, _)| {
        let name = ident.to_string();
        let name = name.trim_start_matches("r#");
        let konst = format_ident!("{}_KEY", name.to_uppercase(), span = ident.span());
        let doc = format!("The key of the tool of the method `{name}`: `{key}`.");
        quote_spanned!(ident.span()=> #[doc = #doc] pub const #konst: &'static str = #key;)
    });
    let blocks = tools.iter().map(|(_, _, block)| block);
    quote! {
        #imp

        #[allow(dead_code)]
        impl #self_ty {
            /// The keys of this toolset's tools, in the order its methods are written.
            pub const TOOLS: &'static [&'static str] = &[#(#keys),*];
            #(#consts)*
        }

        const _: () = {
            impl #p::Toolset for #self_ty {
                const TOOLS: &'static [&'static str] = &[#(#keys),*];

                fn bound_tools(
                    __set: &::std::sync::Arc<Self>,
                ) -> ::std::vec::Vec<#p::BoundTool> {
                    ::std::vec![#(#blocks),*]
                }
            }
        };
    }
}
