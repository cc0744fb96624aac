//! The contract between the `#[tool]` macro and the tackle runtime.
//!
//! The macro reads a tool's attributes when the program compiles; the runtime reads
//! its spec when the program runs. The two must agree on what the attributes are
//! called, which words each enum attribute takes, which characters a name may hold and
//! which replay policy a tool's side effects allow. Each of those rules is defined
//! here, once, and both sides use it:
//!
//! * the macro checks attributes with these rules, and writes an enum value into its
//!   expansion as its word, turned back into the value at compile time by the same
//!   table (`SideEffects::expect("write")` in a `static`): no variant name crosses from
//!   one crate to the other, so renaming a variant changes this crate alone;
//! * the runtime serializes and parses the same words, and checks hand-written specs
//!   with the same functions.
//!
//! Most programs never name this crate: `tackle` re-exports the enums.

#![warn(missing_docs)]

pub mod attr;
mod attribute;
mod enums;
mod names;
mod secrets;
mod table;
mod words;

pub use attribute::{Attribute, Form, InSpec, Settled};
pub use enums::{
    ExecutionMode, ModelHint, ReplayPolicy, ResultShaping, SandboxKind, Sensitivity, SideEffects,
    Trust, DEFAULT_MAX_RESULT_TOKENS,
};
pub use names::{
    check_name, check_version, is_name, is_namespace, is_version, name_from, NAME_CHARACTERS,
    VERSION_CHARACTERS,
};
pub use secrets::{is_secret_name, SECRET_WORDS};
pub use table::{attribute, reference_table, ATTRIBUTES};
pub use words::{UnknownWord, WordSet, Words};
