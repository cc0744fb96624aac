//! The runtime's modules import one way, as `docs/architecture.md` draws them: each
//! module uses only modules of its own layer or a lower one, and there is no cycle.
//!
//! Read from the sources: every `crate::<module>` path outside comments and unit
//! tests is an edge from the file's top-level module to `<module>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first. A module may import modules of its layer or below.
const LAYERS: &[&[&str]] = &[
    // Foundation: what a tool is and the values the door works with.
    &[
        "spec",
        "version",
        "canonical",
        "bounds",
        "capability",
        "schema",
        "validate",
        "error",
        "events",
        "content",
        "context",
    ],
    // What the macro registers.
    &["abi"],
    // The tools, the recordings, and what the door's stages use.
    &[
        "registry", "replay", "approval", "audit", "shape", "sanitize", "sandbox",
    ],
    // The door.
    &["call"],
    // Batches of calls.
    &["executor"],
    // Runs: what one task owns, over the shared runtime.
    &["run"],
    // What is built on calls.
    &["chain", "pipeline", "agent"],
    // Runs that outlive their process.
    &["durable"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The code of a file without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module named by a `crate::` path in `code`; `None` for a path into the crate
/// root itself (`crate::Type`), which a module should not use.
fn imports(code: &str) -> Vec<Option<String>> {
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `$crate::` in macros is the user-facing path, not an internal edge.
            !code[..*at].ends_with('$')
        })
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            name.chars()
                .next()
                .filter(char::is_ascii_lowercase)
                .map(|_| name.clone())
        })
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/tackle-runtime/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap();
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" || relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for import in imports(&code(&text)) {
            match import {
                Some(target) if target != module => {
                    edges.entry(module.clone()).or_default().insert(target);
                }
                Some(_) => {}
                None => problems.push(format!(
                    "{} imports from the crate root; name the module that defines it",
                    relative.display()
                )),
            }
        }
        edges.entry(module).or_default();
    }
    assert!(problems.is_empty(), "{problems:#?}");
    edges
}

#[test]
fn every_module_has_a_layer() {
    let graph = graph();
    let unplaced: Vec<&String> = graph.keys().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (and from docs/architecture.md): {unplaced:?}"
    );
}

#[test]
fn imports_go_down_the_layers() {
    let graph = graph();
    let mut upward = Vec::new();
    for (from, targets) in &graph {
        for to in targets {
            match (layer_of(from), layer_of(to)) {
                (Some(a), Some(b)) if b > a => upward.push(format!("{from} -> {to}")),
                (_, None) => upward.push(format!("{from} -> {to} (not a module)")),
                _ => {}
            }
        }
    }
    assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
    // The two halves the door joins do not know each other.
    assert!(
        !graph["registry"].contains("replay"),
        "{:?}",
        graph["registry"]
    );
    assert!(
        !graph["replay"].contains("registry"),
        "{:?}",
        graph["replay"]
    );
}

#[test]
fn there_is_no_import_cycle() {
    let graph = graph();
    // Depth-first search with colours, iterative.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let mut colour: BTreeMap<&str, Colour> =
        graph.keys().map(|k| (k.as_str(), Colour::White)).collect();
    for start in graph.keys() {
        if colour[start.as_str()] != Colour::White {
            continue;
        }
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(
            start.as_str(),
            graph[start].iter().map(String::as_str).collect(),
        )];
        colour.insert(start, Colour::Grey);
        while let Some((node, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(next) => match colour.get(next).copied() {
                    Some(Colour::Grey) => {
                        let path: Vec<&str> = stack.iter().map(|(n, _)| *n).collect();
                        panic!("import cycle: {} -> {next}", path.join(" -> "));
                    }
                    Some(Colour::White) => {
                        colour.insert(next, Colour::Grey);
                        let targets = graph[next].iter().map(String::as_str).collect();
                        stack.push((next, targets));
                    }
                    _ => {}
                },
                None => {
                    colour.insert(node, Colour::Black);
                    stack.pop();
                }
            }
        }
    }
}

#[test]
fn the_scanner_sees_imports() {
    let code = code("use crate::spec::ToolSpec;\n// crate::call in a comment\nfn f() { crate::error::x(); $crate::abi::y }\n#[cfg(test)]\nuse crate::agent;");
    let found: Vec<Option<String>> = imports(&code);
    assert_eq!(found, [Some("spec".into()), Some("error".into())]);
    assert_eq!(imports("crate::Args"), [None]);
}
