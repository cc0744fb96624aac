//! The modules of the core and agent crates import one way, as `docs/architecture.md`
//! draws them: each module uses only modules of its own layer or a lower one, and
//! there is no cycle, between modules or between the files of one folder. (Cargo
//! itself keeps the core from using the agent crate: it does not depend on it.)
//!
//! Read from the sources: every `crate::<module>` path outside comments and unit
//! tests is an edge from the file's top-level module to `<module>` (the agent crate
//! names the core's modules by the same paths).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first. A module may import modules of its layer or below.
const LAYERS: &[&[&str]] = &[
    // Foundation: what a tool is and the values the door works with.
    &[
        "spec",
        "version",
        "canonical",
        "keyhash",
        "bounds",
        "capability",
        "schema",
        "validate",
        "error",
        "events",
        "content",
        "secrets",
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
    // What is built on calls (the agent crate from here up).
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

/// The crates whose modules are layered: the core, then the agent crate on it.
const CRATES: &[&str] = &["crates/tackle-core/src", "crates/tackle-agent/src"];

/// The agent crate's modules: none of them may be in the core.
const AGENT_MODULES: &[&str] = &["chain", "pipeline", "agent", "durable"];

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for krate in CRATES {
        let src = workspace().join(krate);
        let mut files = Vec::new();
        sources(&src, &mut files);
        scan(&src, files, &mut edges, &mut problems);
    }
    assert!(problems.is_empty(), "{problems:#?}");
    edges
}

fn scan(
    src: &Path,
    files: Vec<std::path::PathBuf>,
    edges: &mut BTreeMap<String, BTreeSet<String>>,
    problems: &mut Vec<String>,
) {
    for file in files {
        let relative = file.strip_prefix(src).unwrap();
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

/// A cycle in `graph`, as `a -> b -> ... -> a`, if there is one (depth-first search
/// with colours, iterative).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
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
                        return Some(format!("{} -> {next}", path.join(" -> ")));
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
    None
}

#[test]
fn there_is_no_import_cycle() {
    if let Some(cycle) = cycle(&graph()) {
        panic!("import cycle: {cycle}");
    }
}

/// The names after each `prefix` in `code` (the first path segment after it, or each
/// first segment of a group: `super::{a, b::c}` names `a` and `b`).
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let word = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        // A whole path start, not the end of a longer one.
        if code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                // The group's top-level items: nested braces belong to an item.
                let mut depth = 0usize;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if c.is_whitespace() => {}
                        _ if item_start && depth == 0 => {
                            names.insert(word(&group[i..]));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                names.insert(word(rest));
            }
        }
    }
    names.retain(|name| name.starts_with(|c: char| c.is_ascii_lowercase()));
    names
}

/// For each folder of a crate (a module with files of its own), its files' imports of
/// one another: `agent/react.rs` using `super::skill` or `crate::agent::skill` is the
/// edge `react -> skill` of `agent`.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut folders: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for krate in CRATES {
        let src = workspace().join(krate);
        let mut files = Vec::new();
        sources(&src, &mut files);
        for file in files {
            let relative = file.strip_prefix(&src).unwrap();
            let parts: Vec<String> = relative
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_string_lossy()
                        .trim_end_matches(".rs")
                        .to_owned()
                })
                .collect();
            let [folder, unit, rest @ ..] = parts.as_slice() else {
                continue;
            };
            if unit == "mod" || unit == "tests" {
                continue;
            }
            let code = code(&std::fs::read_to_string(&file).unwrap());
            // How deep the file's module is below the folder (`agent/react.rs` and
            // `agent/skill/mod.rs`: 1; `agent/skill/parse.rs`: 2), so how many
            // `super::` reach the folder.
            let depth = 1 + rest.len() - usize::from(rest.last().is_some_and(|l| l == "mod"));
            let mut targets = names_after(&code, &format!("crate::{folder}::"));
            targets.extend(names_after(&code, &"super::".repeat(depth)));
            let graph = folders.entry(folder.clone()).or_default();
            let units = graph.entry(unit.clone()).or_default();
            units.extend(targets.into_iter().filter(|t| t != unit));
        }
    }
    // Only edges to files of the folder.
    for graph in folders.values_mut() {
        let units: BTreeSet<String> = graph.keys().cloned().collect();
        for targets in graph.values_mut() {
            targets.retain(|t| units.contains(t));
        }
    }
    folders
}

#[test]
fn the_folder_scanner_sees_imports() {
    let folders = folder_graphs();
    // `agent/skill/mod.rs` runs ReAct skills; `replay/diagnose.rs` reads a cassette.
    assert!(
        folders["agent"]["skill"].contains("react"),
        "{:?}",
        folders["agent"]
    );
    assert!(
        folders["replay"]["diagnose"].contains("cassette"),
        "{:?}",
        folders["replay"]
    );
    assert!(names_after("use super::super::x;", "super::super::").contains("x"));
    assert!(!names_after("a::super::x", "super::").contains("x"));
    let grouped = names_after("use super::{panics, Call, tests::{a, b}, run};", "super::");
    assert_eq!(grouped, ["panics", "run", "tests"].map(String::from).into());
}

#[test]
fn no_folder_has_an_import_cycle() {
    let cycles: Vec<String> = folder_graphs()
        .iter()
        .filter_map(|(folder, graph)| cycle(graph).map(|c| format!("{folder}: {c}")))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles inside folders: {cycles:#?}"
    );
}

#[test]
fn the_agent_crate_holds_the_agent_modules() {
    let core = workspace().join(CRATES[0]);
    for module in AGENT_MODULES {
        assert!(
            !core.join(module).exists() && !core.join(format!("{module}.rs")).exists(),
            "{module} is in the core crate"
        );
        assert!(layer_of(module).is_some_and(|layer| layer >= layer_of("run").unwrap()));
    }
}

#[test]
fn the_scanner_sees_imports() {
    let code = code("use crate::spec::ToolSpec;\n// crate::call in a comment\nfn f() { crate::error::x(); $crate::abi::y }\n#[cfg(test)]\nuse crate::agent;");
    let found: Vec<Option<String>> = imports(&code);
    assert_eq!(found, [Some("spec".into()), Some("error".into())]);
    assert_eq!(imports("crate::Args"), [None]);
}

/// The workspace's root: this suite's package is one folder below it.
fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
