use tackle::tool;

struct Counter(u64);

impl Counter {
    /// Read the counter.
    #[tool(side_effects = read)]
    fn get(&self) -> u64 {
        self.0
    }
}

fn main() {}
