use tackle::{tool, tools};

struct Clock;

#[tools(namespace = "clock")]
impl Clock {
    /// The hour.
    #[tool(side_effects = read)]
    fn hour() -> u8 {
        12
    }
}

fn main() {}
