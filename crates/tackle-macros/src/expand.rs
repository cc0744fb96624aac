//! Checking the attributes against the function, then generating the tool's code.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::ItemFn;

use tackle_contract::{
    attr, is_name, is_namespace, is_version, ExecutionMode, SandboxKind, Sensitivity, SideEffects,
    Trust, Words, NAME_CHARACTERS, VERSION_CHARACTERS,
};

use crate::attrs::{self, ToolAttrs};
use crate::docs;
use crate::json;
use crate::krate;
use crate::sig::{self, Analysed, Output, Param};

/// The checked identity and texts of the tool.
struct Checked {
    name: String,
    namespace: String,
    version: String,
    description: String,
    /// Description of each input parameter, in parameter order (`None`: none given).
    param_docs: Vec<Option<String>>,
}

/// Expands `#[tool(args)] func`. On errors, emits them next to the function (with the
/// attributes the macro consumes removed), so the rest of the crate still compiles.
pub fn expand(args: TokenStream, mut func: ItemFn) -> TokenStream {
    let (attrs, mut errors) = attrs::parse(args);
    let analysed = sig::analyse(&mut func.sig, &mut errors);
    let checked = check(&attrs, &analysed, &func, &mut errors);
    match (
        errors.into_iter().reduce(|mut a, b| {
            a.combine(b);
            a
        }),
        checked,
    ) {
        (None, Some(checked)) => generate(&attrs, &analysed, &checked, &func),
        (Some(error), _) => {
            let error = error.to_compile_error();
            quote!(#error #func)
        }
        (None, None) => quote!(#func),
    }
}

fn check(
    attrs: &ToolAttrs,
    analysed: &Analysed,
    func: &ItemFn,
    errors: &mut Vec<syn::Error>,
) -> Option<Checked> {
    let fn_ident = &func.sig.ident;
    let fn_name = fn_ident.to_string().trim_start_matches("r#").to_owned();

    let side_effects = attrs.side_effects.as_ref();
    if !attrs.given.iter().any(|g| g == attr::SIDE_EFFECTS) {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "missing `side_effects`: say what calling this tool does to the world, e.g. #[tool(side_effects = none)] (one of: {})",
                SideEffects::WORDS.join(", ")
            ),
        ));
    }
    if let (Some(policy), Some(effects)) = (&attrs.replay_policy, side_effects) {
        if !policy.value.allowed_for(effects.value) {
            errors.push(syn::Error::new(
                policy.span,
                format!(
                    "`replay_policy = {}` is not allowed on a `{}` tool: replay would run it again on a miss; use `must_stub` (the default) or `fail_loud`",
                    policy.value.attribute_spelling(),
                    effects.value
                ),
            ));
        }
    }

    let name = match &attrs.name {
        Some(lit) => checked_text(lit.value(), lit.span(), "name", false, errors),
        None => fn_name.clone(),
    };
    let namespace = match &attrs.namespace {
        Some(lit) => checked_text(lit.value(), lit.span(), "namespace", true, errors),
        None => std::env::var("CARGO_CRATE_NAME").unwrap_or_else(|_| "tools".to_owned()),
    };
    let version = match &attrs.version {
        Some(lit) => {
            let v = lit.value();
            if !is_version(&v) {
                errors.push(syn::Error::new(
                    lit.span(),
                    format!(
                        "`version` may hold only {VERSION_CHARACTERS}, e.g. \"1\" or \"2.1.0\""
                    ),
                ));
            }
            v
        }
        None => "1".to_owned(),
    };

    let doc_lines = docs::doc_lines(&func.attrs);
    let description = match &attrs.description {
        Some(lit) if lit.value().trim().is_empty() => {
            errors.push(syn::Error::new(lit.span(), "`description` is empty: say what the tool does"));
            String::new()
        }
        Some(lit) => lit.value().trim().to_owned(),
        None => docs::first_paragraph(&doc_lines).unwrap_or_else(|| {
            errors.push(syn::Error::new(
                fn_ident.span(),
                format!("tool `{fn_name}` has no description: add a `///` doc comment saying what it does, or `description = \"...\"`"),
            ));
            String::new()
        }),
    };

    let input_names: Vec<String> = analysed
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Input { ident, .. } => {
                Some(ident.to_string().trim_start_matches("r#").to_owned())
            }
            _ => None,
        })
        .collect();
    let has_whole = analysed
        .params
        .iter()
        .any(|p| matches!(p, Param::Whole { .. }));
    let list = if input_names.is_empty() {
        "none".to_owned()
    } else {
        input_names.join(", ")
    };
    for (ident, _) in &attrs.params {
        if !input_names.contains(&ident.to_string()) {
            errors.push(syn::Error::new(
                ident.span(),
                format!("`{ident}` in `params(...)` is not an input parameter of `{fn_name}`; its input parameters are: {list}"),
            ));
        }
    }
    if let Some(key) = &attrs.idempotency_key {
        if !has_whole && !input_names.contains(&key.value()) {
            errors.push(syn::Error::new(
                key.span(),
                format!("`idempotency_key` names `{}`, which is not an input parameter of `{fn_name}`; its input parameters are: {list}", key.value()),
            ));
        }
    }
    if attrs.blocking && analysed.is_async {
        errors.push(syn::Error::new(
            func.sig.asyncness.map_or(Span::call_site(), |a| a.span),
            "`blocking` is for synchronous tools that block; an async tool must not block (move blocking work into `tokio::task::spawn_blocking`)",
        ));
    }

    let arguments = docs::arguments_section(&doc_lines);
    let param_docs = analysed
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Input { ident, docs, .. } => Some((ident, docs)),
            _ => None,
        })
        .map(|(ident, own_docs)| {
            let own = own_docs
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let plain = ident.to_string().trim_start_matches("r#").to_owned();
            if !own.is_empty() {
                return Some(own);
            }
            attrs
                .params
                .iter()
                .find(|(i, _)| *i == plain)
                .map(|(_, lit)| lit.value())
                .or_else(|| {
                    arguments
                        .iter()
                        .find(|(n, _)| *n == plain)
                        .map(|(_, d)| d.clone())
                })
        })
        .collect();

    attrs.side_effects.as_ref()?;
    Some(Checked {
        name,
        namespace,
        version,
        description,
        param_docs,
    })
}

/// Checks a name (or, with `dotted`, a dot-separated namespace) and returns it.
fn checked_text(
    value: String,
    span: Span,
    what: &str,
    dotted: bool,
    errors: &mut Vec<syn::Error>,
) -> String {
    let ok = if dotted {
        is_namespace(&value)
    } else {
        is_name(&value)
    };
    if !ok {
        let rule = if dotted {
            format!("dot-separated segments of {NAME_CHARACTERS}, e.g. \"math\" or \"llm.openai\"")
        } else {
            format!("{NAME_CHARACTERS}, e.g. \"add\" or \"read-file\"")
        };
        errors.push(syn::Error::new(
            span,
            format!("`{what}` = \"{value}\" is not allowed: use {rule}"),
        ));
    }
    value
}

/// An enum value in the expansion: its word, turned back into the value at compile
/// time by the contract's table (see `tackle_contract`), so no variant name crosses
/// from the macro to the runtime.
fn word_tokens<T: Words>(p: &TokenStream, value: T) -> TokenStream {
    let ty = format_ident!("{}", T::TYPE_NAME);
    let word = value.word();
    quote!(#p::#ty::expect(#word))
}

fn opt<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

fn generate(
    attrs: &ToolAttrs,
    analysed: &Analysed,
    checked: &Checked,
    func: &ItemFn,
) -> TokenStream {
    let krate = krate::path(attrs.krate.as_ref());
    let p = quote!(#krate::__private);
    let serde_path = format!("{}::serde", tokens_text(&p));
    let schemars_path = format!("{}::schemars", tokens_text(&p));
    let fn_ident = &func.sig.ident;
    let vis = &func.vis;
    let Checked {
        name,
        namespace,
        version,
        description,
        param_docs,
    } = checked;
    let key = format!("{namespace}.{name}@{version}");

    // The input: one field per input parameter, or the `Args<T>` type.
    let whole = analysed.params.iter().find_map(|p| match p {
        Param::Whole { inner } => Some(inner),
        _ => None,
    });
    let fields = analysed
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Input {
                ident, ty, secret, ..
            } => Some((ident, ty, *secret)),
            _ => None,
        })
        .zip(param_docs)
        .map(|((ident, ty, secret), doc)| {
            let doc = doc.as_ref().map(|d| quote!(#[doc = #d]));
            let secret = secret.then(|| quote!(#[schemars(extend("writeOnly" = true))]));
            quote!(#doc #secret #ident: #ty)
        });
    let args_struct = quote! {
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_path, deny_unknown_fields)]
        #[schemars(crate = #schemars_path)]
        #[allow(non_camel_case_types, dead_code)]
        struct __TackleArgs { #(#fields,)* }
    };
    let input_type = match whole {
        Some(inner) => quote!(#inner),
        None => quote!(__TackleArgs),
    };

    let input_schema = match &attrs.input_schema {
        Some(v) => {
            let v = json::to_tokens(&p, v);
            quote!(#p::Schema::Written(#v))
        }
        None => quote!(#p::Schema::Derived(#p::input_schema::<#input_type>())),
    };
    let output_schema = match (&attrs.output_schema, &analysed.output) {
        (Some(v), _) => json::to_tokens(&p, v),
        (None, Output::Unit) => quote!(#p::output_schema::<()>()),
        (None, Output::Plain(t) | Output::Fallible(t)) => quote!(#p::output_schema::<#t>()),
    };
    let examples = attrs.examples.iter().map(|(input, output)| {
        let input = json::to_tokens(&p, input);
        let output = opt(output.as_ref().map(|o| json::to_tokens(&p, o)));
        quote!(#p::example(#input, #output))
    });

    // The call: arguments in the function's order.
    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    for (i, param) in analysed.params.iter().enumerate() {
        match param {
            Param::Input { ident, .. } => call_args.push(quote!(__args.#ident)),
            Param::Context { by_ref: true } => call_args.push(quote!(__ctx)),
            Param::Context { by_ref: false } => {
                call_args.push(quote!(::core::clone::Clone::clone(__ctx)))
            }
            Param::Resource { inner } => {
                let var = format_ident!("__resource{i}");
                prelude.push(quote!(let #var = #p::resource::<#inner>(KEY, &__ctx)?;));
                call_args.push(quote!(#var));
            }
            Param::Whole { .. } => call_args.push(quote!(#p::Args(__args))),
        }
    }
    // In the call, `__ctx` is always a `&ToolContext`.
    let invoke = quote!(#fn_ident(#(#call_args),*));
    let call = if attrs.blocking {
        quote!(#p::run_blocking(KEY, move || {
            let __ctx: &#p::ToolContext = &__ctx;
            #invoke
        }).await?)
    } else if analysed.is_async {
        quote!({
            let __ctx: &#p::ToolContext = &__ctx;
            #invoke.await
        })
    } else {
        invoke
    };
    let finish = match &analysed.output {
        Output::Unit => quote! {
            #call;
            ::core::result::Result::Ok(#p::serde_json::Value::Null)
        },
        Output::Plain(_) => quote! {
            let __out = #call;
            #p::encode_output(KEY, &__out)
        },
        Output::Fallible(_) => quote!(#p::encode_result(KEY, #call)),
    };

    // `check` made sure it is there.
    let side_effects = word_tokens(
        &p,
        attrs.side_effects.map_or(SideEffects::None, |w| w.value),
    );
    let replay_policy = opt(attrs.replay_policy.map(|w| word_tokens(&p, w.value)));
    let execution_mode = word_tokens(
        &p,
        attrs
            .execution_mode
            .map_or(ExecutionMode::default(), |w| w.value),
    );
    let result_shaping = opt(attrs.result_shaping.map(|w| word_tokens(&p, w.value)));
    let sensitivity = word_tokens(
        &p,
        attrs
            .sensitivity
            .map_or(Sensitivity::default(), |w| w.value),
    );
    let sandbox = word_tokens(
        &p,
        attrs.sandbox.map_or(SandboxKind::default(), |w| w.value),
    );
    let preferred_model = opt(attrs.preferred_model.as_ref());
    let defer_loading = attrs.defer_loading;
    let reveals_secrets = attrs.reveals_secrets;
    let secrets = &attrs.secrets;
    let approval_when = match &attrs.approval_when {
        Some(path) => quote! {
            ::core::option::Option::Some({
                let __f: fn(&#p::serde_json::Value) -> bool = #path;
                __f
            })
        },
        None => quote!(::core::option::Option::None),
    };
    let trust = word_tokens(&p, attrs.trust.map_or(Trust::default(), |w| w.value));
    let capabilities = &attrs.requires_capability;
    let tags = &attrs.tags;
    let idempotency_key = opt(attrs.idempotency_key.as_ref());
    let cost_estimate = opt(attrs.cost_estimate.map(|d| {
        let m = d.mantissa().unsigned_abs();
        let (lo, mid, hi) = (m as u32, (m >> 32) as u32, (m >> 64) as u32);
        let (negative, scale) = (d.is_sign_negative(), d.scale());
        quote!(#p::rust_decimal::Decimal::from_parts(#lo, #mid, #hi, #negative, #scale))
    }));
    let deprecated = attrs.deprecated;
    let deprecation_note = opt(attrs.deprecation_note.as_ref());
    let needs_approval = attrs.needs_approval;
    let timeout_ms = opt(attrs.timeout_ms);
    let max_result_tokens = opt(attrs.max_result_tokens);
    let blocking = attrs.blocking;
    let uses_context = analysed
        .params
        .iter()
        .any(|p| matches!(p, Param::Context { .. }));
    // A sync tool that does not block runs to completion in the door, with no future
    // to allocate; async and blocking tools get a boxed future.
    let (handler, registered_handler) = if !analysed.is_async && !attrs.blocking {
        let handler = quote! {
            #[allow(unused_variables, clippy::unit_arg)]
            fn __tackle_handler(
                __ctx: &#p::ToolContext,
                __input: #p::serde_json::Value,
            ) -> ::core::result::Result<#p::serde_json::Value, #p::ToolError> {
                let __args: #input_type = #p::decode_args(KEY, __input)?;
                #(#prelude)*
                #finish
            }
        };
        (
            handler,
            quote!(#p::RegisteredHandler::Sync(__tackle_handler)),
        )
    } else {
        let handler = quote! {
            #[allow(unused_variables, clippy::unit_arg)]
            fn __tackle_handler(
                __ctx: #p::ToolContext,
                __input: #p::serde_json::Value,
            ) -> #p::ToolFuture {
                ::std::boxed::Box::pin(async move {
                    let __args: #input_type = #p::decode_args(KEY, __input)?;
                    #(#prelude)*
                    #finish
                })
            }
        };
        (
            handler,
            quote!(#p::RegisteredHandler::Async(__tackle_handler)),
        )
    };
    // Specs are built lazily at run time; these need checks the macro cannot make.
    let check_at_build = !attrs.examples.is_empty()
        || attrs.input_schema.is_some()
        || attrs.output_schema.is_some()
        || whole.is_some();
    let companion_doc = format!("The `{key}` tool generated by `#[tool]`: its key and spec.");

    quote! {
        #func

        #[doc = #companion_doc]
        #[allow(non_camel_case_types)]
        #vis struct #fn_ident {}

        const _: () = {
            const KEY: &str = #key;

            static SPEC: #p::StaticSpec = #p::StaticSpec {
                name: #name,
                namespace: #namespace,
                version: #version,
                description: #description,
                side_effects: #side_effects,
                replay_policy: #replay_policy,
                permissions: &[#(#capabilities),*],
                idempotency_key: #idempotency_key,
                cost_estimate: #cost_estimate,
                tags: &[#(#tags),*],
                deprecated: #deprecated,
                deprecation_note: #deprecation_note,
                execution_mode: #execution_mode,
                needs_approval: #needs_approval,
                timeout_ms: #timeout_ms,
                max_result_tokens: #max_result_tokens,
                result_shaping: #result_shaping,
                secrets: &[#(#secrets),*],
                approval_when: #approval_when,
                trust: #trust,
                sensitivity: #sensitivity,
                preferred_model: #preferred_model,
                defer_loading: #defer_loading,
                reveals_secrets: #reveals_secrets,
                sandbox: #sandbox,
                blocking: #blocking,
                uses_context: #uses_context,
            };

            #args_struct

            impl #fn_ident {
                /// The registry key, `namespace.name@version`.
                pub const KEY: &'static str = KEY;

                /// The tool's specification.
                pub fn spec() -> #p::ToolSpec {
                    SPEC.build(#input_schema, #output_schema, ::std::vec![#(#examples),*])
                }
            }

            #handler

            #p::inventory::submit! {
                #p::ToolRegistration::new(
                    KEY,
                    &SPEC,
                    #fn_ident::spec,
                    #check_at_build,
                    #registered_handler,
                    ::core::file!(),
                    ::core::line!(),
                    ::core::module_path!(),
                )
            }
        };
    }
}

/// The text of a path, for attributes that take it as a string (`serde(crate = "...")`).
fn tokens_text(tokens: &TokenStream) -> String {
    tokens.to_string().replace(' ', "")
}
