//! No library: the package holds the trybuild cases of `tests/ui/`, run by `tests/ui.rs`.
