//! Fuzz target `door_input`: see `fuzz/targets.rs`.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::door_input(data));
