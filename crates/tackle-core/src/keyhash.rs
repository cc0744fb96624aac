//! The hasher of the maps looked up on every call.
//!
//! The registry finds a tool by its key, and a cassette a recording by its tool's key
//! and the canonical form of its input, once per call: short strings, hashed a word
//! at a time ([`KeyHasher`]). Their keys come from the program (registered tools) or
//! from local files the program opens (a cassette's recordings, a journal's calls in
//! flight), not from the calls being looked up: a call's text is only looked up.
//! Like FNV before it, the hasher has no seed, so it is not for maps whose keys a
//! remote caller chooses; hashes that are persisted use [`crate::canonical::Fnv`],
//! whose values are fixed.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map hashed with [`KeyHasher`].
pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// A set hashed with [`KeyHasher`].
pub(crate) type KeySet<T> = HashSet<T, BuildHasherDefault<KeyHasher>>;

/// A hasher that takes a key eight bytes at a time (xor, multiply, fold): a tool's
/// key (`namespace.name@version`) in two or three steps, where a byte-at-a-time hash
/// waits on a multiply per byte. Not for persisted hashes (see
/// [`crate::canonical::Fnv`]) nor for maps whose keys a caller chooses.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl KeyHasher {
    const SEED: u64 = 0x517c_c1b7_2722_0a95;

    /// Mixes a word in: one full multiply, its two halves folded together, so every
    /// bit of the word reaches every bit of the state, low and high.
    #[inline]
    fn add(&mut self, word: u64) {
        let full = u128::from(self.0 ^ word) * u128::from(Self::SEED);
        self.0 = (full as u64) ^ ((full >> 64) as u64);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if rest.is_empty() {
            return;
        }
        // The last eight bytes, overlapping the chunks before, in one load; a key
        // shorter than that byte by byte (a copy of a few bytes would be a call, and
        // reading its result back would wait for its stores).
        let word = match bytes.len().checked_sub(8) {
            Some(from) => {
                let mut word = [0u8; 8];
                word.copy_from_slice(&bytes[from..]);
                u64::from_le_bytes(word)
            }
            None => rest
                .iter()
                .rev()
                .fold(0u64, |word, &byte| (word << 8) | u64::from(byte)),
        };
        self.add(word);
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_hasher_spreads_keys_that_differ_in_one_byte() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<KeyHasher>::default();
        // Keys of every length around a word, differing anywhere: the table picks a
        // bucket by the low bits and a tag by the top seven.
        for width in [1usize, 7, 8, 9, 15, 16, 17, 30] {
            let keys: Vec<String> = (0..4096)
                .map(|i| format!("{:0>width$}", format!("n{i}")))
                .collect();
            let low: std::collections::HashSet<u64> =
                keys.iter().map(|k| hasher.hash_one(k) & 0xfff).collect();
            assert!(
                low.len() > 2400,
                "width {width}: {} buckets of 4096",
                low.len()
            );
        }
    }
}
