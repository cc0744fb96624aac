//! Compile errors of `#[tool]` are part of the product: each case under `tests/ui/`
//! must fail to compile with exactly the message in its `.stderr` file.
//! Regenerate after an intended change with `TRYBUILD=overwrite cargo test -p tackle-ui-tests --test ui`.

#[test]
fn compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
