//! Cassette files: stable names and bytes, atomic writes that survive SIGKILL, and
//! clear errors for corrupt, truncated or foreign files.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tackle::call::Operation;
use tackle::replay::{load, CassetteError, Mode};
use tackle::{
    registry::DynamicTool, replay::CassetteConfig, Cassette, Registry, Run, Runtime, SideEffects,
    ToolContext, ToolError, ToolSpec,
};

fn temp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("tackle-replay-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cassette.json")
}

fn open(path: &Path, mode: Mode) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false),
    )
    .unwrap()
}

/// A model-like operation, `llm.test.complete@m`, performed through the door.
fn model() -> Operation {
    let mut spec = ToolSpec::new(
        "llm.test",
        "complete",
        "m",
        SideEffects::External,
        "A model.",
    );
    spec.input_schema = json!(true);
    spec.output_schema = json!(true);
    Operation::new(spec)
}

/// Performs `op` with `input` as a call of `run`; `output` is what it gives when it runs.
async fn perform(
    run: &Run,
    op: &Operation,
    input: Value,
    output: Value,
) -> Result<Value, ToolError> {
    run.perform(
        op,
        move || input,
        &ToolContext::new(),
        move || async move { Ok(output) },
    )
    .await
}

/// Records `count` model calls into a fresh cassette at `path`.
async fn record(path: &Path, count: usize, tag: &str) {
    let cassette = open(path, Mode::Rewrite);
    let run = Run::new(&Arc::new(Runtime::default())).with_cassette(cassette.clone());
    let op = model();
    for i in 0..count {
        let a = json!({"y": tag, "b": [i, "x"]});
        let input = json!({"z": i, "a": a});
        let output = json!({"zeta": 1, "alpha": a, "text": format!("reply {i} {tag}")});
        perform(&run, &op, input, output).await.unwrap();
    }
    cassette.finish().unwrap();
}

/// Records an operation, then calls `echo` with each of `order`, then an operation.
async fn record_in_order(path: &Path, order: &[i64]) {
    let mut spec = ToolSpec::new("t", "echo", "1", SideEffects::None, "Echoes n.");
    spec.input_schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let tool = DynamicTool::new(spec, |_ctx, input: serde_json::Value| async move {
        Ok::<_, String>(input["n"].clone())
    });
    let mut registry = Registry::default();
    registry.register(tool).unwrap();
    let cassette = open(path, Mode::Rewrite);
    let run = Run::new(&Arc::new(Runtime::new(registry))).with_cassette(cassette.clone());
    let op = model();
    perform(&run, &op, json!("before"), json!("ok"))
        .await
        .unwrap();
    for n in order {
        let ctx = tackle::ToolContext::new();
        run.call("t.echo@1", json!({ "n": n }), &ctx).await.unwrap();
    }
    perform(&run, &op, json!("after"), json!("ok"))
        .await
        .unwrap();
    cassette.finish().unwrap();
}

#[tokio::test]
async fn the_order_tool_calls_started_in_does_not_change_the_file() {
    let a = temp("order-a");
    let b = temp("order-b");
    record_in_order(&a, &[3, 1, 2, 1]).await;
    record_in_order(&b, &[1, 2, 1, 3]).await;
    let first = std::fs::read_to_string(&a).unwrap();
    assert_eq!(first, std::fs::read_to_string(&b).unwrap());
    let file = load(&a).unwrap();
    let inputs: Vec<String> = file
        .interactions
        .iter()
        .map(|i| i.input.to_string())
        .collect();
    assert_eq!(
        inputs,
        [
            "\"before\"",
            "{\"n\":1}",
            "{\"n\":1}",
            "{\"n\":2}",
            "{\"n\":3}",
            "\"after\""
        ]
    );
    let numbers: Vec<u64> = file.interactions.iter().map(|i| i.call).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn the_macro_names_the_cassette_after_the_test() {
    let err = tackle::cassette!(CassetteConfig::new().with_env_overrides(false)).unwrap_err();
    let CassetteError::Missing { path } = &err else {
        panic!("{err}")
    };
    // `<test binary>.<module>.<test>`: the module path, `::` as `.`.
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/cassettes/{}.the_macro_names_the_cassette_after_the_test.json",
        module_path!().replace("::", ".")
    ));
    assert_eq!(path, &expected);
}

#[tokio::test]
async fn files_are_pretty_stable_and_byte_identical_when_re_recorded() {
    let path = temp("stable");
    record(&path, 3, "t").await;
    let first = std::fs::read_to_string(&path).unwrap();
    record(&path, 3, "t").await;
    let second = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        first, second,
        "re-recording an identical run is byte-identical"
    );

    let head: Vec<&str> = first.lines().take(6).collect();
    assert_eq!(
        head,
        [
            "{",
            "  \"format\": \"tackle-cassette\",",
            "  \"version\": 1,",
            "  \"complete\": true,",
            "  \"name\": \"cassette\",",
            "  \"tools\": {},"
        ]
    );
    // Recorded payloads keep their key order.
    let z = first.find("\"zeta\"").unwrap();
    assert!(z < first.find("\"alpha\"").unwrap());
    assert!(first.find("\"z\": 0").unwrap() < first.find("\"y\": \"t\"").unwrap());
    // No temporary files are left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "cassette.json")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn a_panicking_test_never_overwrites_a_good_cassette() {
    let path = temp("panic");
    record(&path, 2, "good").await;
    let good = std::fs::read(&path).unwrap();
    let p = path.clone();
    let outcome = tokio::spawn(async move {
        let cassette = open(&p, Mode::Rewrite);
        let run = Run::new(&Arc::new(Runtime::default())).with_cassette(cassette);
        perform(&run, &model(), json!({}), json!("new"))
            .await
            .unwrap();
        panic!("the test fails before finish()");
    })
    .await;
    assert!(outcome.is_err());
    assert_eq!(std::fs::read(&path).unwrap(), good);
}

#[tokio::test]
async fn corrupt_and_truncated_cassettes_name_file_line_and_column() {
    let path = temp("corrupt");
    record(&path, 2, "c").await;
    let text = std::fs::read_to_string(&path).unwrap();

    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let err = Cassette::open(&path, CassetteConfig::new().with_env_overrides(false)).unwrap_err();
    let CassetteError::Corrupt {
        path: p,
        line,
        column,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(p, &path);
    assert!(*line > 1 && *column > 0, "{err}");
    assert!(
        err.to_string().contains(&format!("{}", path.display()))
            && err.to_string().contains("line"),
        "{err}"
    );

    std::fs::write(
        &path,
        text.replacen("\"interactions\"", "\"interactions\": [], \"extra\"", 1),
    )
    .unwrap();
    let err = load(&path).unwrap_err();
    assert!(
        matches!(err, CassetteError::Corrupt { line: 7, .. }),
        "{err}"
    );

    std::fs::write(&path, text.replacen("\"version\": 1", "\"version\": 9", 1)).unwrap();
    let err = load(&path).unwrap_err();
    assert!(
        matches!(
            err,
            CassetteError::UnsupportedVersion {
                found: 9,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("version 9"), "{err}");

    std::fs::write(
        &path,
        text.replacen("\"complete\": true", "\"complete\": false", 1),
    )
    .unwrap();
    assert!(matches!(
        load(&path).unwrap_err(),
        CassetteError::Incomplete { .. }
    ));

    std::fs::write(&path, "[1, 2]").unwrap();
    assert!(matches!(
        load(&path).unwrap_err(),
        CassetteError::Corrupt { line: 1, .. }
    ));
}

/// The writer half of the SIGKILL test. Run alone, it records a few cassettes and
/// checks each; run as the killed child (`TACKLE_KILL_TEST_PATH` set), it rewrites
/// its cassette until it is killed.
#[tokio::test]
async fn writer_loop_writes_valid_cassettes() {
    let (path, forever) = match std::env::var_os("TACKLE_KILL_TEST_PATH") {
        Some(p) => (PathBuf::from(p), true),
        None => (temp("writer"), false),
    };
    let mut round = 0;
    while forever || round < 3 {
        record(&path, 300, &format!("round {round}")).await;
        if !forever {
            assert_eq!(load(&path).unwrap().interactions.len(), 300);
        }
        round += 1;
    }
}

#[test]
fn sigkill_while_recording_leaves_the_previous_file_intact() {
    let path = temp("sigkill");
    let exe = std::env::current_exe().unwrap();
    // The writer's test name as the harness knows it: its module path in the binary.
    let writer = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::writer_loop_writes_valid_cassettes"),
        None => "writer_loop_writes_valid_cassettes".to_owned(),
    };
    let mut kills = 0;
    for i in 0..20 {
        let mut child = Command::new(&exe)
            .arg(&writer)
            .args(["--exact", "--test-threads=1"])
            .env("TACKLE_KILL_TEST_PATH", &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until a cassette exists (from this child or an earlier one)...
        let started = Instant::now();
        while !path.exists() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(2));
        }
        // ...then kill at an arbitrary moment, most likely mid-write.
        let jitter = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
            % 40;
        std::thread::sleep(Duration::from_millis(5 + u64::from(jitter) + i));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        let file = load(&path).unwrap_or_else(|e| panic!("after kill {i}: {e}"));
        assert!(file.complete);
        assert_eq!(file.interactions.len(), 300, "after kill {i}");
    }
    assert_eq!(kills, 20, "every child was killed while writing");
    // The killed writers' temporary files are gone once the cassette is opened again.
    drop(open(&path, Mode::Replay));
    let dir = path.parent().unwrap();
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "orphan temporary files: {left:?}");
}

#[test]
fn opening_a_cassette_clears_only_dead_writers_temporary_files() {
    let path = temp("orphans");
    let dir = path.parent().unwrap().to_owned();
    let dead = dir.join(".cassette.json.4194305.0.tmp"); // above Linux's largest pid
    let mine = dir.join(format!(".cassette.json.{}.0.tmp", std::process::id()));
    let other = dir.join(".other.json.4194305.0.tmp");
    for file in [&dead, &mine, &other] {
        std::fs::write(file, "{").unwrap();
    }
    drop(open(&path, Mode::New));
    if cfg!(target_os = "linux") {
        assert!(!dead.exists(), "a dead writer's file is removed");
    }
    assert!(mine.exists(), "a live writer's file is kept");
    assert!(other.exists(), "another cassette's files are not touched");
}
