//! The fuzz targets (`fuzz/`, run with `cargo +nightly fuzz run <target>`) as part of the
//! ordinary suite: each target's body runs over its seed corpus and deterministic
//! mutations of it (bit flips, byte insertions and deletions, spliced and repeated
//! chunks), so that a crash found once stays a regression test here. Each body must
//! return without a panic, an abort or a hang.

#[allow(dead_code)]
#[path = "../../fuzz/targets.rs"]
mod targets;

use std::path::Path;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(6) {
            0 if !data.is_empty() => {
                let i = at.min(data.len() - 1);
                data[i] ^= 1 << rng.below(8);
            }
            1 => {
                let alphabet = b"{}[]\":,\\\n\t &*!#-'0123456789aZ";
                data.insert(at, alphabet[rng.below(alphabet.len())]);
            }
            2 if !data.is_empty() => {
                data.remove(at.min(data.len() - 1));
            }
            3 => {
                let end = (at + rng.below(64)).min(data.len());
                let chunk = data[at.min(end)..end].to_vec();
                for _ in 0..rng.below(8) {
                    data.splice(at..at, chunk.iter().copied());
                }
            }
            4 => data.truncate(at),
            _ => {
                let byte = rng.below(256) as u8;
                data.insert(at, byte);
            }
        }
    }
    data
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "{target} has a seed corpus");
    seeds
}

fn run(target: &str, body: fn(&[u8]), mutations: usize) {
    let seeds = corpus(target);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ target.len() as u64);
    for seed in &seeds {
        body(seed);
    }
    for _ in 0..mutations {
        let seed = &seeds[rng.below(seeds.len())];
        body(&mutate(seed, &mut rng));
    }
}

#[test]
fn door_input() {
    run("door_input", targets::door_input, 20_000);
}

#[test]
fn cassette() {
    run("cassette", targets::cassette, 3000);
}

#[test]
fn pipeline_yaml() {
    run("pipeline_yaml", targets::pipeline_yaml, 20_000);
}

#[test]
fn stdio_framing() {
    run("stdio_framing", targets::stdio_framing, 500);
}
