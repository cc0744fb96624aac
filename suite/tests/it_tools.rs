//! Tools and the door: the macro's attributes, the door's stages and gates, bounds, secrets, content, the executor, toolsets, the first hour's errors, the corpora, and the architecture's import rules.
//!
//! One test binary for the area (each module is one former test file): the facade is
//! linked once here, not once per file. A module's tools stay its own: each builds its
//! runtime with `Runtime::from_inventory_in(module_path!())`.

mod architecture;
mod audit_tracing;
mod bounds;
mod content;
mod door;
mod every_door;
mod executor;
mod first_hour_errors;
mod fuzz_corpus;
mod gates;
mod macro_attrs;
mod panic_stderr;
mod sanitize_corpus;
mod secrets;
mod seed_tools;
mod toolsets;

/// Helpers the modules share (`suite/tests/support/`), compiled once.
mod support {
    #[path = "../support/capture.rs"]
    pub mod capture;
    #[path = "../support/interest.rs"]
    pub mod interest;
}
