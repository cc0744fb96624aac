use tackle::{tool, tools};

struct Echo;

#[tools(namespace = "echo")]
impl Echo {
    /// Says it back.
    #[tool(side_effects = none)]
    fn say<T: ToString>(&self, text: T) -> String {
        text.to_string()
    }
}

fn main() {}
