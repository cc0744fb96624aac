//! tackle's test suite, benchmarks and maintainers' programs.
//!
//! This package publishes nothing: its library is empty, and what it holds is in
//! `tests/` (the end-to-end tests through the facade), `benches/` (criterion
//! benchmarks, each with its in-run baseline) and `examples/` (the MCP conformance
//! fixtures, the door's profile, an HTTP load generator). It is a package of its own
//! so that the library's examples, which teach, link none of what these need.
