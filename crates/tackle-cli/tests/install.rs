//! `cargo install tackle-cli`, as a user will run it once the crates are published:
//! the workspace's crates are packaged (`cargo package`, the files the registry would
//! get), unpacked, and the CLI is built from its unpacked package, offline, with the
//! packaged crates it depends on standing in for the registry's, as `cargo install`
//! builds it (outside this workspace, from the package alone). The built
//! `cargo-tackle` must then answer `--help`. A file missing from a package, a path
//! dependency without a version, or a build that works only inside the workspace
//! fails here.
//!
//! Every published crate is packaged and built from its package here (the facade and
//! the Temporal crate too), so this test is also what `cargo publish --dry-run` would
//! check. They are built once, together (`cargo install` itself would resolve and
//! build the CLI's dependencies a second time, for nothing this does not check).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates the CLI needs, as packaged (the facade is packaged too, and built, so
/// the crate users depend on first is checked the same way).
const PACKAGES: &[&str] = &[
    "tackle-contract",
    "tackle-macros",
    "tackle-core",
    "tackle-agent",
    "tackle-mcp",
    "tackle-sqlite",
    "tackle-rs",
    "tackle-cli",
    "tackle-temporal",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `command`, failing the test with its output when it fails.
fn run(command: &mut Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

#[test]
fn the_cli_installs_from_its_packaged_crate_and_answers_help() {
    let ws = workspace();
    let target = ws.join("target");
    let version = env!("CARGO_PKG_VERSION");
    let mut package = Command::new(env!("CARGO"));
    package
        .current_dir(&ws)
        .args(["package", "--no-verify", "--allow-dirty", "--offline"])
        .arg("--target-dir")
        .arg(&target);
    for name in PACKAGES {
        package.args(["-p", name]);
    }
    run(&mut package, "cargo package");

    // Unpacked as the registry would unpack them: outside the workspace, as a user's
    // cargo finds them.
    let unpacked =
        std::env::temp_dir().join(format!("tackle-install-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).unwrap();
    for name in PACKAGES {
        let file = target
            .join("package")
            .join(format!("{name}-{version}.crate"));
        // `-m`: the files get the time of unpacking, not the package's fixed one, so
        // that a build of an earlier package unpacked at the same path (the process
        // id comes round again) is not taken as this one's.
        run(
            Command::new("tar")
                .arg("-m")
                .arg("-xzf")
                .arg(&file)
                .arg("-C")
                .arg(&unpacked),
            &format!("unpacking {}", file.display()),
        );
    }
    let path_of = |name: &str| unpacked.join(format!("{name}-{version}"));
    // The packaged crates stand in for the registry's (not published yet).
    let patches: Vec<String> = PACKAGES
        .iter()
        .map(|name| {
            format!(
                "patch.crates-io.{name}.path={:?}",
                path_of(name).display().to_string()
            )
        })
        .collect();
    let with_patches = |command: &mut Command| {
        for patch in &patches {
            command.arg("--config").arg(patch);
        }
    };

    // One build of the three packages a user installs or depends on first, as one
    // feature set: a workspace around the unpacked packages (none of them is one),
    // resolved against this workspace's lockfile so the dependencies are the versions
    // the tests were built with (and what of them is built already is reused).
    let members = ["tackle-rs", "tackle-temporal", "tackle-cli"]
        .iter()
        .map(|name| format!("{:?}", format!("{name}-{version}")))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        unpacked.join("Cargo.toml"),
        format!("[workspace]\nmembers = [{members}]\nresolver = \"2\"\n"),
    )
    .unwrap();
    std::fs::copy(ws.join("Cargo.lock"), unpacked.join("Cargo.lock")).unwrap();
    let mut build = Command::new(env!("CARGO"));
    build
        .current_dir(&unpacked)
        .args(["build", "--offline", "--workspace", "--lib", "--bins"])
        .args(["--message-format", "json-render-diagnostics"])
        // The facade as a user's `tackle-rs = { features = [...] }` builds it.
        .args(["--features", "tackle-rs/mcp,tackle-rs/sqlite,tackle-rs/cli"])
        .arg("--target-dir")
        .arg(&target);
    with_patches(&mut build);
    let messages = run(&mut build, "cargo build of the packaged crates");
    // The binary this build made (not one of the workspace's own builds).
    let built = messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == "cargo-tackle")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("the build names the cargo-tackle it made");
    assert!(
        built.starts_with(&target),
        "{} is not in {}",
        built.display(),
        target.display()
    );

    let help = run(
        Command::new(&built).args(["tackle", "--help"]),
        "cargo-tackle --help",
    );
    assert!(help.contains("cassette"), "{help}");
    assert!(help.contains("runs"), "{help}");
    let _ = std::fs::remove_dir_all(&unpacked);
}
