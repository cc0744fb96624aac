//! `cargo tackle`: cassettes from a terminal (see `tackle_cli::cassettes`).

fn main() {
    tackle_cli::cassettes::main()
}
