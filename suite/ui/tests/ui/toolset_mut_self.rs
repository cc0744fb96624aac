use tackle::{tool, tools};

struct Counter(u64);

#[tools(namespace = "counter")]
impl Counter {
    /// Adds one.
    #[tool(side_effects = write)]
    fn bump(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn main() {}
