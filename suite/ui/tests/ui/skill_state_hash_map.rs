use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle::SkillState;

/// Hash-ordered fields, directly and nested: each one is an error.
#[derive(Serialize, Deserialize, JsonSchema, SkillState)]
struct Plan {
    stops: HashMap<String, u32>,
    visited: Vec<HashSet<String>>,
    fine: std::collections::BTreeMap<String, u32>,
}

fn main() {}
