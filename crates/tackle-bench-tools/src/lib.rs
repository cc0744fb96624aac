//! Benchmark fixture: 1,000 generated `#[tool]` functions (see `build.rs`). Link it
//! with `use tackle_bench_tools as _;` to have them in the inventory.

use tackle::tool;

include!(concat!(env!("OUT_DIR"), "/tools.rs"));

/// How many tools this crate defines.
pub const COUNT: usize = 1000;
