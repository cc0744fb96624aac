use tackle::tools;

struct Empty;

#[tools(namespace = "empty")]
impl Empty {
    /// Not a tool.
    fn nothing(&self) {}
}

fn main() {}
