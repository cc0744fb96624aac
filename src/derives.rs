//! The derives `#[tool]` needs of the types in a tool's signature (part of the macro
//! ABI), checked so that a type without one gives one compile error, at the type,
//! naming what to derive.
//!
//! The expansion asks of each type, by autoref specialization, whether it has each
//! trait: `(&Probe::<T>::NEW).tackle_deserialize()` finds [`HasDeserialize`] on
//! `&Probe<T>` when `T: DeserializeOwned` and answers [`Yes`], else finds
//! [`LacksDeserialize`] on `Probe<T>` and answers [`No`]. A [`ParameterDerives`] (or
//! [`OutputDerives`]) holds the answers about one type. Its verdict's
//! `must_derive::<T>()` is the one check: it compiles only when every answer is yes,
//! and otherwise fails on a trait that no type implements, whose
//! `#[diagnostic::on_unimplemented]` message names what is missing. Every other use
//! of the type goes through its *wire type*, the type itself when it has its derives,
//! else `()`, so the rest of the expansion compiles either way and adds no errors.
//!
//! Nothing here is for direct use: it is public so that the compiler names its traits
//! `tackle::derives::...` in the errors it reports.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The type a question is asked of.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// The probe of `T`.
    pub const NEW: Probe<T> = Probe(PhantomData);
}

impl<T> Clone for Probe<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Probe<T> {}

/// The type has the trait asked about (or the attribute writes the schema).
pub struct Yes;

/// The type lacks the trait asked about.
pub struct No;

/// A question: `(&Probe::<T>::NEW).$method()` answers `Yes`, found on `&Probe<T>`
/// when `T: $bound`, else `No`, found on `Probe<T>` after one dereference.
macro_rules! question {
    ($method:ident: $bound:path, $has:ident, $lacks:ident) => {
        /// Answers yes: the type has the trait.
        pub trait $has {
            /// Yes.
            fn $method(self) -> Yes;
        }

        impl<T: $bound> $has for &Probe<T> {
            fn $method(self) -> Yes {
                Yes
            }
        }

        /// Answers no: the type lacks the trait.
        pub trait $lacks {
            /// No.
            fn $method(self) -> No;
        }

        impl<T> $lacks for Probe<T> {
            fn $method(self) -> No {
                No
            }
        }
    };
}

question!(tackle_deserialize: DeserializeOwned, HasDeserialize, LacksDeserialize);
question!(tackle_serialize: Serialize, HasSerialize, LacksSerialize);
question!(tackle_json_schema: JsonSchema, HasJsonSchema, LacksJsonSchema);

/// An input parameter's type `T` (or the `T` of `Args<T>`) and whether it is
/// `DeserializeOwned` (`D`) and `JsonSchema` (`S`).
pub struct ParameterDerives<T, D, S>(Probe<T>, D, S);

impl<T, D, S> ParameterDerives<T, D, S> {
    /// The answers about one parameter type.
    pub fn new(deserialize: D, json_schema: S) -> Self {
        ParameterDerives(Probe::NEW, deserialize, json_schema)
    }
}

/// A return type's `T` (or the `T` of `Result<T, E>`) and whether it is
/// `Serialize` (`Se`) and `JsonSchema` (`S`).
pub struct OutputDerives<T, Se, S>(Probe<T>, Se, S);

impl<T, Se, S> OutputDerives<T, Se, S> {
    /// The answers about one return type.
    pub fn new(serialize: Se, json_schema: S) -> Self {
        OutputDerives(Probe::NEW, serialize, json_schema)
    }
}

/// What the decoded input holds for a parameter, and the verdict on its derives.
pub trait InputWire {
    /// The parameter's type.
    type Param;
    /// The parameter's type when it has its derives, else `()`.
    type Wire;
    /// [`ParameterDerived`], or what the type lacks.
    type Verdict;
    /// The parameter from its wire form.
    fn unwire(&self, wire: Self::Wire) -> Self::Param;
    /// The verdict on the type's derives.
    fn verdict(&self) -> Self::Verdict;
}

/// What the encoded output is made from, and the verdict on its derives.
pub trait OutputWire {
    /// The return type.
    type Output;
    /// The return type when it has its derives, else `()`.
    type Wire;
    /// [`OutputDerived`], or what the type lacks.
    type Verdict;
    /// The output in its wire form.
    fn to_wire(&self, output: Self::Output) -> Self::Wire;
    /// The verdict on the type's derives.
    fn verdict(&self) -> Self::Verdict;
}

impl<T> InputWire for ParameterDerives<T, Yes, Yes> {
    type Param = T;
    type Wire = T;
    type Verdict = ParameterDerived;
    fn unwire(&self, wire: T) -> T {
        wire
    }
    fn verdict(&self) -> ParameterDerived {
        ParameterDerived
    }
}

impl<T> OutputWire for OutputDerives<T, Yes, Yes> {
    type Output = T;
    type Wire = T;
    type Verdict = OutputDerived;
    fn to_wire(&self, output: T) -> T {
        output
    }
    fn verdict(&self) -> OutputDerived {
        OutputDerived
    }
}

/// A type lacking a derive: its wire is `()`, and its verdict names what it lacks.
/// The crate does not compile then (`must_derive` fails), so these never run.
macro_rules! lacking {
    ($(($encoding:ident, $json_schema:ident) => $parameter:ident, $output:ident;)*) => {$(
        impl<T> InputWire for ParameterDerives<T, $encoding, $json_schema> {
            type Param = T;
            type Wire = ();
            type Verdict = $parameter;
            fn unwire(&self, _: ()) -> T {
                unreachable!("a tool whose parameter lacks a derive does not compile")
            }
            fn verdict(&self) -> $parameter {
                $parameter
            }
        }

        impl<T> OutputWire for OutputDerives<T, $encoding, $json_schema> {
            type Output = T;
            type Wire = ();
            type Verdict = $output;
            fn to_wire(&self, _: T) {}
            fn verdict(&self) -> $output {
                $output
            }
        }
    )*};
}

lacking! {
    (No, Yes) => ParameterWithoutDeserialize, OutputWithoutSerialize;
    (Yes, No) => ParameterWithoutJsonSchema, OutputWithoutJsonSchema;
    (No, No) => ParameterWithoutDerives, OutputWithoutDerives;
}

// The verdicts. `verdict().must_derive::<T>()` is the check: its bound is a trait
// that no type implements, whose message names the missing derives, unless the
// type has them all.

/// The parameter type has every derive it needs.
pub struct ParameterDerived;

impl ParameterDerived {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U>(self) {}
}

/// The parameter type lacks `serde::Deserialize`.
pub struct ParameterWithoutDeserialize;

impl ParameterWithoutDeserialize {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolParameterDeserialize>(self) {}
}

/// The parameter type lacks `schemars::JsonSchema` (of schemars 1.x).
pub struct ParameterWithoutJsonSchema;

impl ParameterWithoutJsonSchema {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolParameterJsonSchema>(self) {}
}

/// The parameter type lacks both derives.
pub struct ParameterWithoutDerives;

impl ParameterWithoutDerives {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolParameterDerives>(self) {}
}

/// The return type has every derive it needs.
pub struct OutputDerived;

impl OutputDerived {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U>(self) {}
}

/// The return type lacks `serde::Serialize`.
pub struct OutputWithoutSerialize;

impl OutputWithoutSerialize {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolOutputSerialize>(self) {}
}

/// The return type lacks `schemars::JsonSchema` (of schemars 1.x).
pub struct OutputWithoutJsonSchema;

impl OutputWithoutJsonSchema {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolOutputJsonSchema>(self) {}
}

/// The return type lacks both derives.
pub struct OutputWithoutDerives;

impl OutputWithoutDerives {
    /// The check at the type: compiles only when `U` has what the verdict says.
    pub fn must_derive<U: ToolOutputDerives>(self) {}
}

/// The input schema of `Args<T>`'s wire type.
pub fn input_schema_of<C: InputWire>(_: &C) -> Value
where
    C::Wire: JsonSchema,
{
    tackle_core::schema::input_schema::<C::Wire>()
}

/// The output schema of the return type's wire type.
pub fn output_schema_of<C: OutputWire>(_: &C) -> Value
where
    C::Wire: JsonSchema,
{
    tackle_core::schema::output_schema::<C::Wire>()
}

/// Implemented by no type: a parameter type without `serde::Deserialize` is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `serde::Deserialize` to be a tool parameter",
    label = "no `serde::Deserialize`",
    note = "a tool parameter's type (or the `T` of `Args<T>`) needs `#[derive(serde::Deserialize, schemars::JsonSchema)]`, with schemars 1.x"
)]
pub trait ToolParameterDeserialize {}

/// Implemented by no type: a parameter type without `schemars::JsonSchema` is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `schemars::JsonSchema` (schemars 1.x) to be a tool parameter",
    label = "no `schemars::JsonSchema` of schemars 1.x",
    note = "tackle derives schemas with schemars 1.x; a `JsonSchema` of schemars 0.8 or 0.9 is another trait: depend on `schemars = \"1\"`"
)]
pub trait ToolParameterJsonSchema {}

/// Implemented by no type: a parameter type without either derive is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `serde::Deserialize` and `schemars::JsonSchema` (schemars 1.x) to be a tool parameter",
    label = "no `serde::Deserialize`, no `schemars::JsonSchema`",
    note = "tackle decodes a tool's input with serde and derives its schema with schemars 1.x: depend on `serde` (feature `derive`) and `schemars = \"1\"`"
)]
pub trait ToolParameterDerives {}

/// Implemented by no type: a return type without `serde::Serialize` is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `serde::Serialize` to be returned by a tool",
    label = "no `serde::Serialize`",
    note = "a tool's return type (or the `T` of `Result<T, E>`) needs `#[derive(serde::Serialize, schemars::JsonSchema)]`, with schemars 1.x"
)]
pub trait ToolOutputSerialize {}

/// Implemented by no type: a return type without `schemars::JsonSchema` is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `schemars::JsonSchema` (schemars 1.x) to be returned by a tool",
    label = "no `schemars::JsonSchema` of schemars 1.x",
    note = "tackle derives schemas with schemars 1.x; a `JsonSchema` of schemars 0.8 or 0.9 is another trait: depend on `schemars = \"1\"`"
)]
pub trait ToolOutputJsonSchema {}

/// Implemented by no type: a return type without either derive is refused here.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must derive `serde::Serialize` and `schemars::JsonSchema` (schemars 1.x) to be returned by a tool",
    label = "no `serde::Serialize`, no `schemars::JsonSchema`",
    note = "tackle encodes a tool's output with serde and derives its schema with schemars 1.x: depend on `serde` (feature `derive`) and `schemars = \"1\"`"
)]
pub trait ToolOutputDerives {}
