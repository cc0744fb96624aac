//! Enums whose values are words: the `words!` macro that defines one (its table of
//! words, conversions both ways, serde by word), the [`Words`] trait and [`WordSet`]
//! the macro checks attributes with, and [`UnknownWord`], the error of a word that
//! names no value.

use std::fmt;

/// Whether two strings are equal, in a `const` context.
pub(crate) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A word that names no value of an enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWord {
    /// What the word should have named, e.g. `side effects`.
    pub what: &'static str,
    /// The word as given.
    pub word: String,
    /// The words that are known.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} `{}`; expected one of: {}",
            self.what,
            self.word,
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownWord {}

/// The words of one enum, as an attribute's [`Form`] names them: what the macro needs
/// to read an attribute's word and write it into an expansion, without the enum.
///
/// [`Form`]: crate::Form
#[derive(Clone, Copy, Debug)]
pub struct WordSet {
    /// The enum's name, as the runtime re-exports it (`SideEffects`).
    pub type_name: &'static str,
    /// Every value's word, in declaration order.
    pub words: &'static [&'static str],
    /// The word a word or an alias names.
    pub(crate) parse: fn(&str) -> Option<&'static str>,
}

impl WordSet {
    /// The word an attribute's spelling names (`_` allowed for `-`, aliases read).
    pub fn from_attribute(&self, spelling: &str) -> Option<&'static str> {
        (self.parse)(&spelling.replace('_', "-"))
    }

    /// How an attribute spells each word: the word with `_` for `-`.
    pub fn attribute_spellings(&self) -> Vec<String> {
        self.words.iter().map(|w| w.replace('-', "_")).collect()
    }
}

/// An enum whose values are words: what the macro needs to check an attribute and
/// write its value into an expansion.
pub trait Words: Copy + Sized + 'static {
    /// The type's name, as the runtime re-exports it.
    const TYPE_NAME: &'static str;
    /// The type's words, as an attribute's form names them.
    const SET: WordSet;
    /// Every value, in declaration order.
    const ALL: &'static [Self];
    /// The value's word.
    fn word(self) -> &'static str;
    /// The value an attribute spelling names (`_` allowed for `-`).
    fn from_attribute(spelling: &str) -> Option<Self>;
    /// How an attribute spells the value.
    fn attribute_spelling(self) -> String;
}

/// Defines an enum whose values are words: the one table of its words, the
/// conversions both ways (one usable at compile time), and serde by word.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
        $( aliases { $( $alias:literal => $aliased:ident, )+ } )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Every value's word, in declaration order.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The word for this value, as in specs, cassettes and logs.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }

            /// Other words read as values (never written): the names another
            /// specification gives the same values.
            pub const ALIASES: &'static [(&'static str, $name)] = &[$($( ($alias, $name::$aliased) ),+)?];

            /// The value a word (or an alias) names, if any.
            pub const fn parse(word: &str) -> Option<$name> {
                $( if same(word, $word) { return Some($name::$variant); } )+
                let mut i = 0;
                while i < $name::ALIASES.len() {
                    if same(word, $name::ALIASES[i].0) {
                        return Some($name::ALIASES[i].1);
                    }
                    i += 1;
                }
                None
            }

            /// The value a word names. Used in `#[tool]` expansions inside `static`s,
            /// where it runs at compile time: an unknown word (a macro and runtime of
            /// different versions) stops the build instead of reaching run time.
            pub const fn expect(word: &str) -> $name {
                match $name::parse(word) {
                    Some(value) => value,
                    None => panic!(concat!("not a word of ", stringify!($name))),
                }
            }

            /// The value an attribute names: the word, with `_` allowed for `-`
            /// (`must_stub` for `must-stub`), as Rust identifiers cannot hold `-`.
            pub fn from_attribute(spelling: &str) -> Option<$name> {
                $name::parse(&spelling.replace('_', "-"))
            }

            /// How an attribute spells this value: the word with `_` for `-`.
            pub fn attribute_spelling(self) -> String {
                self.as_str().replace('-', "_")
            }
        }

        impl $name {
            /// The type's words, as an attribute's form names them.
            pub const SET: WordSet = WordSet {
                type_name: stringify!($name),
                words: $name::WORDS,
                parse: |word| $name::parse(word).map($name::as_str),
            };
        }

        impl Words for $name {
            const TYPE_NAME: &'static str = stringify!($name);
            const SET: WordSet = $name::SET;
            const ALL: &'static [$name] = $name::ALL;
            fn word(self) -> &'static str {
                self.as_str()
            }
            fn from_attribute(spelling: &str) -> Option<$name> {
                $name::from_attribute(spelling)
            }
            fn attribute_spelling(self) -> String {
                $name::attribute_spelling(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<$name, UnknownWord> {
                $name::parse(s).ok_or_else(|| UnknownWord {
                    what: $what,
                    word: s.to_owned(),
                    expected: $name::WORDS,
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "one of: {}", $name::WORDS.join(", "))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::parse(v).ok_or_else(|| E::unknown_variant(v, $name::WORDS))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }
    };
}

pub(crate) use words;
