//! The modules of the core and agent crates import one way, as `docs/architecture.md`
//! draws them: each module uses only modules of its own layer or a lower one, and
//! there is no cycle, between modules or between the files of one folder. (Cargo
//! itself keeps the core from using the agent crate: it does not depend on it.)
//!
//! Read from the sources: every `crate::<module>` path outside comments and unit
//! tests is an edge from the file's top-level module to `<module>`, and in the agent
//! crate every `tackle_core::<module>` path too (it names the core's modules so).

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
    // What is built on calls (the agent crate from here up): chat models, the
    // providers' forms and clients, tool search, pipelines and the chains built as
    // pipelines.
    &["model", "providers", "search", "pipeline", "chain"],
    // The ReAct loop, and the agents that run it.
    &["react"],
    // Skills: a ReAct loop or a pipeline under a name, with a typed state.
    &["skill"],
    // Runs that outlive their process.
    &["durable"],
    // Evals: datasets of cases, each run by an agent, judged and reported.
    &["evals"],
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
    paths_after(code, "crate::")
}

/// Every module of the core named by a `tackle_core::` path in `code` (how the agent
/// crate names them); `None` for a path into the core's root (`tackle_core::Type`).
fn core_imports(code: &str) -> Vec<Option<String>> {
    paths_after(code, "tackle_core::")
}

/// The first segment of every path that starts with `prefix` in `code` when it is a
/// module's name (lower case); `None` for anything else (a path into a crate's root).
fn paths_after(code: &str, prefix: &str) -> Vec<Option<String>> {
    code.match_indices(prefix)
        .filter(|(at, _)| {
            // `$crate::` in macros is the user-facing path, not an internal edge; a
            // path that only ends in `prefix` (`my_crate::`, `a::crate::`) is another.
            let longer =
                |s: &str| s.ends_with(|c: char| c == '$' || c == '_' || c.is_ascii_alphanumeric());
            let before = &code[..*at];
            !longer(before.strip_suffix("::").unwrap_or(before))
        })
        .map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
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
const AGENT_MODULES: &[&str] = &[
    "model",
    "providers",
    "search",
    "pipeline",
    "chain",
    "react",
    "skill",
    "durable",
];

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for krate in CRATES {
        let src = workspace().join(krate);
        let mut files = Vec::new();
        sources(&src, &mut files);
        // The agent crate's paths into the core are edges of its modules too.
        let names_the_core = *krate != CRATES[0];
        scan(&src, files, names_the_core, &mut edges, &mut problems);
    }
    assert!(problems.is_empty(), "{problems:#?}");
    edges
}

/// Adds the edges of the modules of `files` (under `src`) to `edges`: their `crate::`
/// paths, and their `tackle_core::` paths when `names_the_core`.
fn scan(
    src: &Path,
    files: Vec<std::path::PathBuf>,
    names_the_core: bool,
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
        let code = code(&std::fs::read_to_string(&file).unwrap());
        let mut found = imports(&code);
        if names_the_core {
            found.extend(core_imports(&code));
        }
        for import in found {
            match import {
                Some(target) if target != module => {
                    edges.entry(module.clone()).or_default().insert(target);
                }
                Some(_) => {}
                None => problems.push(format!(
                    "{} imports from a crate's root; name the module that defines it",
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
    // The agent crate's paths into the core are edges: the loop batches its calls.
    assert!(graph["react"].contains("executor"), "{:?}", graph["react"]);
    // And its own: a skill runs the ReAct loop, which knows nothing of skills.
    assert!(graph["skill"].contains("react"), "{:?}", graph["skill"]);
    assert!(!graph["react"].contains("skill"), "{:?}", graph["react"]);
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
/// one another: `react/steps.rs` using `super::answers` or `crate::react::answers` is
/// the edge `steps -> answers` of `react`.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    folder_graphs_of(CRATES)
}

/// [`folder_graphs`] of the crates whose sources are at `crates`.
fn folder_graphs_of(crates: &[&str]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut folders: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for krate in crates {
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
            // How deep the file's module is below the folder (`react/steps.rs` and a
            // `react/x/mod.rs`: 1; `react/x/y.rs`: 2), so how many
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
    // `react/steps.rs` (the loop) asks `react/answers.rs` whether a reply is an answer,
    // which knows nothing of the loop; `replay/diagnose.rs` reads a cassette.
    assert!(
        folders["react"]["steps"].contains("answers"),
        "{:?}",
        folders["react"]
    );
    assert!(
        !folders["react"]["answers"].contains("steps"),
        "{:?}",
        folders["react"]
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
    let code = code("use crate::spec::ToolSpec;\n// crate::call in a comment\nfn f() { crate::error::x(); $crate::abi::y; tackle_core::run::Run::new(); }\n#[cfg(test)]\nuse crate::react;");
    let found: Vec<Option<String>> = imports(&code);
    assert_eq!(found, [Some("spec".into()), Some("error".into())]);
    assert_eq!(imports("crate::Args"), [None]);
    assert_eq!(core_imports(&code), [Some("run".into())]);
    assert_eq!(core_imports("tackle_core::ToolContext"), [None]);
    assert!(core_imports("my_tackle_core::x").is_empty());
    assert_eq!(
        core_imports("::tackle_core::call::x"),
        [Some("call".into())]
    );
}

/// The other crates: their modules are not layered, but no two import each other
/// (directly or round a longer loop), and no folder's files do.
const OTHER_CRATES: &[&str] = &[
    "crates/tackle-contract/src",
    "crates/tackle-macros/src",
    "crates/tackle-mcp/src",
    "crates/tackle-sqlite/src",
    "crates/tackle-temporal/src",
    "crates/tackle-cli/src",
];

/// The module graph of one crate at `src` (`crate::` paths, as [`graph`] reads
/// them; a path into the crate root is no edge here, and `bin/` holds other crates).
fn crate_graph(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace().join(src);
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.retain(|file| !file.strip_prefix(&src).unwrap().starts_with("bin"));
    let mut edges = BTreeMap::new();
    let mut root_imports = Vec::new();
    scan(&src, files, false, &mut edges, &mut root_imports);
    edges
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut cycles = Vec::new();
    for krate in OTHER_CRATES {
        let graph = crate_graph(krate);
        if let Some(found) = cycle(&graph) {
            cycles.push(format!("{krate}: {found}"));
        }
        for (folder, graph) in folder_graphs_of(&[krate]) {
            if let Some(found) = cycle(&graph) {
                cycles.push(format!("{krate}/{folder}: {found}"));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
    // The scan reads these crates: the MCP server uses its task store, not back.
    let mcp = crate_graph("crates/tackle-mcp/src");
    assert!(mcp["server"].contains("tasks"), "{mcp:?}");
    assert!(!mcp["tasks"].contains("server"), "{mcp:?}");
}

/// Source files over this many lines hold more than one concept.
const MAX_LINES: usize = 1000;

/// Files still over [`MAX_LINES`], each with the most lines it may have: the list
/// only shrinks (a file split leaves it; none may grow or join).
const STILL_TOO_LONG: &[(&str, usize)] = &[
    ("crates/tackle-cli/src/cassettes.rs", 1194),
    ("crates/tackle-core/src/call/mod.rs", 1143),
];

#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let mut files = Vec::new();
    sources(&workspace().join("crates"), &mut files);
    sources(&workspace().join("src"), &mut files);
    let mut over = Vec::new();
    for file in files {
        let relative = file.strip_prefix(workspace()).unwrap();
        let relative = relative.to_string_lossy().replace('\\', "/");
        if !relative.contains("/src/") && !relative.starts_with("src/") {
            continue;
        }
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        let allowed = STILL_TOO_LONG
            .iter()
            .find(|(path, _)| *path == relative)
            .map_or(MAX_LINES, |(_, most)| *most);
        if lines > allowed {
            over.push(format!("{relative}: {lines} lines (at most {allowed})"));
        }
    }
    assert!(over.is_empty(), "files too long: {over:#?}");
}

/// The workspace's root: this suite's package is one folder below it.
fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
