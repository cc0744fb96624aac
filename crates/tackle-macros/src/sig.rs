//! Analysing the tool function's signature: which parameters are the tool's input,
//! which are injected from the caller's context, and what the output is.
//!
//! The rules are syntactic, because a macro cannot resolve names:
//!
//! * a parameter of type `ToolContext` or `&ToolContext` (by any path), or marked
//!   `#[ctx]`, receives the caller's context;
//! * a parameter of type `Resource<T>` receives a resource from the context;
//! * a parameter of type `Args<T>` (usually destructured, `Args(q): Args<Q>`) makes `T`
//!   the whole input object;
//! * every other parameter is one property of the input object; marked `#[secret]`,
//!   or named like a secret (`api_key`, `password`, `token`, ...), its property is
//!   `writeOnly` and its value never leaves the door;
//! * a return type whose last path segment is `Result` is fallible: `Result<T, E>`
//!   gives the output `T`, and `E` (which must implement `Display`) becomes an
//!   `Execution` error.

use crate::errors::Errors;
use syn::{FnArg, GenericArgument, Ident, Pat, PathArguments, ReturnType, Signature, Type};

/// One parameter of the tool function.
pub enum Param {
    /// A property of the input object.
    Input {
        ident: Ident,
        ty: Type,
        docs: Vec<String>,
        /// Marked `#[secret]`, or named like a secret.
        secret: bool,
    },
    /// The caller's context, by reference or by value.
    Context { by_ref: bool },
    /// A resource from the context.
    Resource { inner: Type },
    /// `Args<T>`: `T` is the whole input.
    Whole { inner: Type },
}

/// What the function returns.
pub enum Output {
    /// Nothing (`()`); the output is JSON `null`.
    Unit,
    /// A value.
    Plain(Type),
    /// `Result<T, E>`: the output is `T`.
    Fallible(Type),
}

/// The analysed signature.
pub struct Analysed {
    pub params: Vec<Param>,
    pub output: Output,
    pub is_async: bool,
}

/// Analyses the signature, stripping the attributes the macro consumes (`///` doc
/// comments and `#[ctx]` on parameters) so the function compiles as written.
/// Problems are pushed to `errors`.
pub fn analyse(sig: &mut Signature, errors: &mut Errors) -> Analysed {
    fn err(tokens: impl quote::ToTokens, msg: &str) -> syn::Error {
        syn::Error::new_spanned(tokens, msg)
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(err(
            &sig.generics,
            "a tool cannot be generic: its schema needs concrete types; write a non-generic function (it may call a generic one)",
        ));
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errors.push(err(u, "a tool cannot be `unsafe`: the door calls it with checked input only; wrap the unsafe code in a safe function"));
    }
    if let Some(abi) = &sig.abi {
        errors.push(err(
            abi,
            "a tool cannot have an `extern` ABI; write a plain Rust function",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.push(err(v, "a tool cannot be variadic"));
    }

    let mut params = Vec::new();
    for arg in sig.inputs.iter_mut() {
        let typed = match arg {
            FnArg::Receiver(r) => {
                errors.push(err(
                    &*r,
                    "`#[tool]` on a method needs `#[tools]` on its impl block (`#[tools] impl MyTools { ... }`): the value then holds the tools and their state; or write a free function and pass what it needs as parameters or a `Resource<T>`",
                ));
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let docs = crate::docs::doc_lines(&typed.attrs);
        let marked_ctx = typed.attrs.iter().any(|a| a.path().is_ident("ctx"));
        let marked_secret = typed
            .attrs
            .iter()
            .find(|a| a.path().is_ident("secret"))
            .cloned();
        if let Some(attr) = &marked_secret {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                errors.push(err(attr, "`#[secret]` takes no arguments"));
            }
        }
        typed.attrs.retain(|a| {
            !a.path().is_ident("doc") && !a.path().is_ident("ctx") && !a.path().is_ident("secret")
        });
        let not_an_input = |what: &str| {
            marked_secret.as_ref().map(|attr| {
                err(
                    attr,
                    &format!(
                        "`#[secret]` marks an input parameter (its value is kept out of cassettes, errors and audit events); {what} is not one"
                    ),
                )
            })
        };

        if let Some(found) = impl_trait(&typed.ty) {
            errors.push(err(
                found,
                "`impl Trait` parameters cannot be tools' inputs: the schema needs a concrete type; name the type",
            ));
            continue;
        }
        let ty = (*typed.ty).clone();
        if marked_ctx || last_ident(&ty).is_some_and(|i| i == "ToolContext") {
            errors.extend(not_an_input("the caller's context"));
            params.push(Param::Context {
                by_ref: matches!(ty, Type::Reference(_)),
            });
            continue;
        }
        if let Some(inner) = single_arg(&ty, "Resource") {
            errors.extend(not_an_input("a `Resource<T>`"));
            params.push(Param::Resource { inner });
            continue;
        }
        if let Some(inner) = single_arg(&ty, "Args") {
            errors.extend(not_an_input(
                "`Args<T>` (mark the field of `T` with `#[schemars(extend(\"writeOnly\" = true))]`)",
            ));
            params.push(Param::Whole { inner });
            continue;
        }
        if let Type::Reference(r) = &ty {
            errors.push(err(
                r,
                "a tool's input parameter must own its value: take `String` instead of `&str`, `Vec<T>` instead of `&[T]` (references are only for `&ToolContext`)",
            ));
            continue;
        }
        match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                let name = p.ident.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name);
                let secret = marked_secret.is_some()
                    || tackle_contract::is_secret_name(name, tackle_contract::SECRET_WORDS);
                params.push(Param::Input {
                    ident: p.ident.clone(),
                    ty,
                    docs,
                    secret,
                });
            }
            other => errors.push(err(
                other,
                "unsupported parameter pattern: an input parameter needs a plain name (`count: u32`), which becomes its property in the schema; destructure inside the body, or use `Args(x): Args<T>`",
            )),
        }
    }

    let wholes = params
        .iter()
        .filter(|p| matches!(p, Param::Whole { .. }))
        .count();
    let inputs = params
        .iter()
        .filter(|p| matches!(p, Param::Input { .. }))
        .count();
    if wholes > 1 || (wholes == 1 && inputs > 0) {
        errors.push(err(
            &sig.inputs,
            "`Args<T>` makes `T` the whole input: it must be the only input parameter (context and `Resource<T>` parameters may stay)",
        ));
    }

    let output = match &sig.output {
        ReturnType::Default => Output::Unit,
        ReturnType::Type(_, ty) => {
            if let Some(found) = impl_trait(ty) {
                errors.push(err(found, "a tool cannot return `impl Trait`: the output schema needs a concrete type; name the type"));
                Output::Unit
            } else if is_unit(ty) {
                Output::Unit
            } else if let Some(ok) = first_arg(ty, "Result") {
                Output::Fallible(ok)
            } else {
                Output::Plain((**ty).clone())
            }
        }
    };
    Analysed {
        params,
        output,
        is_async: sig.asyncness.is_some(),
    }
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(t) if t.elems.is_empty())
}

fn last_ident(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Reference(r) => last_ident(&r.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        Type::Paren(p) => last_ident(&p.elem),
        Type::Group(g) => last_ident(&g.elem),
        _ => None,
    }
}

/// `T` when `ty` is `Name<T, ...>` (by any path).
fn first_arg(ty: &Type, name: &str) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// `T` when `ty` is exactly `Name<T>`.
fn single_arg(ty: &Type, name: &str) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    match &seg.arguments {
        PathArguments::AngleBracketed(args) if seg.ident == name && args.args.len() == 1 => {
            first_arg(ty, name)
        }
        _ => None,
    }
}

/// An `impl Trait` anywhere inside the type.
fn impl_trait(ty: &Type) -> Option<&Type> {
    match ty {
        Type::ImplTrait(_) => Some(ty),
        Type::Reference(r) => impl_trait(&r.elem),
        Type::Paren(p) => impl_trait(&p.elem),
        Type::Group(g) => impl_trait(&g.elem),
        Type::Slice(s) => impl_trait(&s.elem),
        Type::Array(a) => impl_trait(&a.elem),
        Type::Ptr(p) => impl_trait(&p.elem),
        Type::Tuple(t) => t.elems.iter().find_map(impl_trait),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                GenericArgument::Type(t) => impl_trait(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}
