//! False positives of the injection scan on ordinary text.
//!
//! The corpus is what every machine that builds this project has: the sources of its
//! dependencies in Cargo's registry (READMEs, changelogs, documentation and code of a
//! hundred-odd crates) and this repository's README and docs. Each block of text
//! between blank lines is one sample; a flagged sample is a false positive, since none
//! of it addresses a model. The rate must stay at or under 1%.

use std::path::{Path, PathBuf};

use tackle::sanitize::scan;

/// Text files under `dir`, sorted, depth-first.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !matches!(name, "target" | ".git" | "node_modules") {
                text_files(&path, out);
            }
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("md" | "rs" | "txt" | "toml")
        ) {
            out.push(path);
        }
    }
}

fn registry_sources() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry").join("src");
    // The registry's own sources: the folder holding the most crates (a local
    // registry's, such as the one `cargo package` makes for a workspace, holds a few).
    std::fs::read_dir(src)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .max_by_key(|index| {
            (
                std::fs::read_dir(index).map_or(0, Iterator::count),
                index.clone(),
            )
        })
}

#[test]
fn false_positive_rate_on_ordinary_text_is_at_most_one_percent() {
    // This repository's prose (its code and tests hold injection samples on purpose).
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut files = vec![root.join("README.md")];
    text_files(&root.join("docs"), &mut files);
    let registry = registry_sources().expect(
        "the dependencies' sources in Cargo's registry (CARGO_HOME/registry/src) are the corpus",
    );
    text_files(&registry, &mut files);

    let (mut samples, mut flagged) = (0usize, Vec::new());
    let mut bytes = 0usize;
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // Keep the run short: at most 64 KiB of any one file, 40 MB in all.
        let cut = text
            .char_indices()
            .map(|(i, _)| i)
            .find(|i| *i >= 64 * 1024)
            .unwrap_or(text.len());
        for block in text[..cut].split("\n\n") {
            let block = block.trim();
            if block.len() < 40 {
                continue;
            }
            samples += 1;
            bytes += block.len();
            let found = scan(block);
            if !found.is_empty() {
                flagged.push((
                    file.clone(),
                    found[0].pattern,
                    block[found[0].range.clone()].to_owned(),
                ));
            }
        }
        if bytes > 40_000_000 {
            break;
        }
    }
    let rate = flagged.len() as f64 / samples as f64;
    println!(
        "{} flagged of {samples} samples ({:.4}%) from {} files, {:.1} MB",
        flagged.len(),
        rate * 100.0,
        files.len(),
        bytes as f64 / 1e6
    );
    for (file, pattern, text) in flagged.iter().take(20) {
        println!("  {pattern}: {text:?} in {}", file.display());
    }
    assert!(samples >= 20_000, "too small a corpus: {samples} samples");
    assert!(
        rate <= 0.01,
        "false-positive rate {:.3}% > 1%",
        rate * 100.0
    );
}
