//! The errors of one expansion: each check adds what it finds, and the expansion reads
//! them all once, at the end, to emit them together.
//!
//! A context dropped without being read is a bug of this crate (the errors it held
//! would vanish and the tool would be generated as if it were right), so dropping one
//! unread stops the expansion, as serde_derive's does.

/// The errors found so far; read them with [`Errors::finish`].
pub struct Errors {
    list: Vec<syn::Error>,
    finished: bool,
}

impl Errors {
    /// No errors yet.
    pub fn new() -> Errors {
        Errors {
            list: Vec::new(),
            finished: false,
        }
    }

    /// Adds one error.
    pub fn push(&mut self, error: syn::Error) {
        self.list.push(error);
    }

    /// Whether no error was found so far.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Ends the context: every error, combined into one to emit, or `None`.
    pub fn finish(mut self) -> Option<syn::Error> {
        self.finished = true;
        std::mem::take(&mut self.list)
            .into_iter()
            .reduce(|mut all, next| {
                all.combine(next);
                all
            })
    }
}

impl Extend<syn::Error> for Errors {
    fn extend<I: IntoIterator<Item = syn::Error>>(&mut self, errors: I) {
        self.list.extend(errors);
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        // Only a bug of this crate gets here (no input can): say so loudly.
        if !self.finished && !std::thread::panicking() {
            panic!("tackle-macros: an error context was dropped without being read");
        }
    }
}
