//! A program's tools from a terminal.
//!
//! Tools register at link time, so the CLI runs inside the program that has them:
//! a binary of yours calls [`main`] (or `tackle::cli::main()` with the facade's `cli`
//! feature):
//!
//! ```text
//! // src/bin/tools.rs
//! fn main() {
//!     tackle_cli::tools::main()
//! }
//! ```
//!
//! | command | what it does |
//! |---|---|
//! | `list [--tag T]... [--json]` | the registered tools |
//! | `show KEY [--form openai\|anthropic\|gemini\|mcp]` | a tool's spec, or its definition in a provider's form |
//! | `search QUERY [-k N] [--json]` | tools by what they do (BM25 over names, descriptions and tags) |
//! | `call KEY JSON [--grant CAP]... [--cassette FILE]` | one call through the door (`-` reads the arguments from stdin) |
//! | `serve --stdio \| --http ADDR [--grant CAP]...` | the tools over MCP |
//! | `pipeline run FILE [--input JSON] [--grant CAP]...` | a pipeline document |
//! | `completions SHELL` | a completion script for bash, zsh, fish, elvish or PowerShell |
//!
//! Calls are denied by default: each `--grant` gives the caller one capability
//! (`fs:read`, `net:*`, ...). A tool that needs approval asks on the terminal; with
//! no terminal to ask, the call is refused. `call --cassette FILE` replays the call
//! when the cassette has it and records it when not (mode `new`; under `CI`, replay
//! only); `TACKLE_CASSETTE` picks another mode, such as `review`. The exit codes are
//! [`Exit`]'s.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};
use tackle_agent::pipeline::{Pipeline, PipelineError};
use tackle_agent::providers::{definition, Provider, ProviderNames};
use tackle_agent::search::ToolIndex;
use tackle_core::approval::ApprovalFuture;
use tackle_core::canonical::canonical;
use tackle_core::replay::{Cassette, CassetteConfig, Mode};
use tackle_core::{ApprovalRequest, Approver, Run, Runtime, ToolContext};
use tackle_mcp::{Identity, McpServer};

use crate::exit::{CliError, Exit};
use crate::term::{self, paint, Style};

/// The tools of this program, from a terminal.
#[derive(Debug, Parser)]
#[command(
    version,
    about = "The tools of this program, from a terminal: list, show, search, call, serve over MCP, run pipelines.",
    long_about = None,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the registered tools.
    List {
        /// Only tools with this tag (repeat for several: all must match).
        #[arg(long, value_name = "TAG")]
        tag: Vec<String>,
        /// Print JSON, one object per tool.
        #[arg(long)]
        json: bool,
    },
    /// Show a tool's spec, or its definition in a provider's form.
    Show {
        /// The tool: full key, `namespace.name`, or a unique bare name.
        key: String,
        /// The provider's form of the definition.
        #[arg(long, value_enum)]
        form: Option<Form>,
    },
    /// Find tools by what they do.
    Search {
        /// What the tool should do.
        query: String,
        /// How many tools at most.
        #[arg(short, long, default_value_t = 5)]
        k: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool through the door and print its result as JSON.
    Call {
        /// The tool: full key, `namespace.name`, or a unique bare name.
        key: String,
        /// The arguments, a JSON object (`-` reads them from standard input).
        arguments: String,
        /// A capability the call may use (repeat for several); none by default.
        #[arg(long = "grant", value_name = "CAP")]
        grants: Vec<String>,
        /// Replay the call from this cassette, or record it there when it is not
        /// in it (`TACKLE_CASSETTE` sets another mode).
        #[arg(long, value_name = "FILE")]
        cassette: Option<PathBuf>,
    },
    /// Serve the tools over MCP.
    Serve {
        /// On standard input and output.
        #[arg(long, conflicts_with = "http", required_unless_present = "http")]
        stdio: bool,
        /// Over streamable HTTP, on this address (`127.0.0.1:8080`).
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// A capability MCP clients' calls may use (repeat for several).
        #[arg(long = "grant", value_name = "CAP")]
        grants: Vec<String>,
    },
    /// Run pipeline documents.
    #[command(subcommand)]
    Pipeline(PipelineCommand),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum PipelineCommand {
    /// Run a pipeline document (YAML) and print the final state as JSON.
    Run {
        /// The document.
        file: PathBuf,
        /// The starting state, a JSON object (default `{}`).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// A capability the pipeline's calls may use (repeat for several).
        #[arg(long = "grant", value_name = "CAP")]
        grants: Vec<String>,
    },
}

/// A provider's form of a tool definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Form {
    /// OpenAI chat completions (strict function calling).
    Openai,
    /// Anthropic messages.
    Anthropic,
    /// Google Gemini function declarations.
    Gemini,
    /// The Model Context Protocol.
    Mcp,
}

impl Form {
    fn provider(self) -> Provider {
        match self {
            Form::Openai => Provider::OpenAi,
            Form::Anthropic => Provider::Anthropic,
            Form::Gemini => Provider::Gemini,
            Form::Mcp => Provider::Mcp,
        }
    }
}

/// Runs the CLI on this process's arguments over every registered tool, and exits
/// with its [`Exit`] code.
pub fn main() -> ! {
    crate::exit::quiet_when_output_closes();
    let exit = run(std::env::args_os());
    std::process::exit(i32::from(exit.code()))
}

/// Runs the CLI on `args` (the program's name first) over every registered tool.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match parse(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match Runtime::from_inventory() {
        Ok(runtime) => finish(execute(cli, runtime)),
        Err(e) => finish(Err(CliError::new(
            Exit::Failure,
            format!("the tools could not be registered: {e}"),
        ))),
    }
}

/// Runs the CLI on `args` over `runtime`'s tools (a runtime with its own audit sink,
/// limits or resources). A call that needs approval asks on the terminal.
pub fn run_with<I, T>(runtime: Runtime, args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match parse(args) {
        Ok(cli) => finish(execute(cli, runtime)),
        Err(e) => clap_exit(&e),
    }
}

/// The program's name: the file name it was run as.
fn program_name(first: Option<&OsString>) -> String {
    first
        .and_then(|a| Path::new(a).file_name())
        .map_or_else(|| "tools".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Parses `args`, naming the program as it was run (help and errors show `tools`,
/// not this crate's name).
fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    utf8_arguments(&args)?;
    let name = program_name(args.first());
    let mut command = Cli::command().name(name.clone()).bin_name(name);
    let matches = command.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches)
}

/// Refuses arguments that are not UTF-8 (the program's name, first, aside) as a
/// usage error naming the first one, its bytes escaped. Both programs check this
/// before parsing: a file argument would otherwise take any bytes, and every other
/// argument would fail with clap's less precise message.
pub(crate) fn utf8_arguments(args: &[OsString]) -> Result<(), clap::Error> {
    match args.iter().skip(1).find(|a| a.to_str().is_none()) {
        None => Ok(()),
        Some(arg) => Err(clap::Error::raw(
            clap::error::ErrorKind::InvalidUtf8,
            format!(
                "the argument {} is not UTF-8\n",
                term::escape_for_terminal(&format!("{arg:?}"))
            ),
        )),
    }
}

/// Prints clap's message (help and version on stdout, errors on stderr) and gives
/// its exit: 0 for help and version, 2 for usage errors.
pub(crate) fn clap_exit(error: &clap::Error) -> Exit {
    // Nothing more can be said when the terminal is gone.
    let _ = error.print();
    if error.use_stderr() {
        Exit::Usage
    } else {
        Exit::Success
    }
}

/// Reports an error and gives the exit.
pub(crate) fn finish(result: Result<Exit, CliError>) -> Exit {
    match result {
        Ok(exit) => exit,
        Err(e) => {
            term::error(&e.message);
            e.exit
        }
    }
}

fn execute(cli: Cli, runtime: Runtime) -> Result<Exit, CliError> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(Exit::Io, format!("no async runtime: {e}")))?;
    match cli.command {
        Command::List { tag, json } => list(&runtime, &tag, json),
        Command::Show { key, form } => show(&runtime, &key, form),
        Command::Search { query, k, json } => search(&runtime, &query, k, json),
        Command::Call {
            key,
            arguments,
            grants,
            cassette,
        } => tokio.block_on(call(runtime, &key, &arguments, &grants, cassette)),
        Command::Serve {
            stdio,
            http,
            grants,
        } => tokio.block_on(serve(runtime, stdio, http, &grants)),
        Command::Pipeline(PipelineCommand::Run {
            file,
            input,
            grants,
        }) => tokio.block_on(run_pipeline(runtime, &file, input.as_deref(), &grants)),
        Command::Completions { shell } => {
            let name = program_name(std::env::args_os().next().as_ref());
            let mut command = Cli::command().name(name.clone());
            clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
            Ok(Exit::Success)
        }
    }
}

fn print_json(value: &Value) -> Result<Exit, CliError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::new(Exit::Failure, format!("the output is not JSON: {e}")))?;
    // A replayed output comes from a cassette: the same JSON, safe on a terminal.
    println!("{}", term::escape_json_for_terminal(&text));
    Ok(Exit::Success)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn list(runtime: &Runtime, tags: &[String], as_json: bool) -> Result<Exit, CliError> {
    let mut tools: Vec<_> = runtime
        .registry()
        .list()
        .filter(|t| tags.iter().all(|tag| t.spec().tags.contains(tag)))
        .collect();
    tools.sort_by(|a, b| a.key().cmp(b.key()));
    if as_json {
        let rows: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "key": t.key(),
                    "description": t.spec().description,
                    "side_effects": t.spec().side_effects,
                    "tags": t.spec().tags,
                })
            })
            .collect();
        return print_json(&Value::Array(rows));
    }
    let colour = term::stdout_colours();
    let width = tools.iter().map(|t| t.key().len()).max().unwrap_or(0);
    for tool in &tools {
        let key = format!("{:width$}", tool.key());
        let effects = format!("{:8}", tool.spec().side_effects.to_string());
        println!(
            "{}  {}  {}",
            paint(&key, Style::Bold, colour),
            paint(&effects, Style::Dim, colour),
            term::clip(first_line(&tool.spec().description), 80)
        );
    }
    if tools.is_empty() {
        eprintln!(
            "no tools{}",
            if tags.is_empty() {
                ""
            } else {
                " with those tags"
            }
        );
    }
    Ok(Exit::Success)
}

fn show(runtime: &Runtime, key: &str, form: Option<Form>) -> Result<Exit, CliError> {
    let tool = runtime.registry().resolve(key)?;
    let value = match form {
        None => serde_json::to_value(tool.spec())
            .map_err(|e| CliError::new(Exit::Failure, format!("the spec is not JSON: {e}")))?,
        Some(form) => {
            let provider = form.provider();
            // The name an agent offers the tool under (one key: never taken).
            let mut names = ProviderNames::empty(provider);
            let name = names
                .insert(tool.key())
                .map_or_else(|taken| taken.name, str::to_owned);
            definition(provider, tool, &name)
        }
    };
    print_json(&value)
}

fn search(runtime: &Runtime, query: &str, k: usize, as_json: bool) -> Result<Exit, CliError> {
    let index = ToolIndex::over(runtime.registry().list().map(|t| &**t), None);
    let hits = index.search(query, k);
    if as_json {
        let rows: Vec<Value> = hits
            .iter()
            .map(|h| json!({"key": h.key, "score": h.score}))
            .collect();
        return print_json(&Value::Array(rows));
    }
    if hits.is_empty() {
        eprintln!("no tool matches `{query}`");
        return Ok(Exit::NotFound);
    }
    let colour = term::stdout_colours();
    for hit in &hits {
        let description = runtime
            .registry()
            .resolve(&hit.key)
            .map(|t| first_line(&t.spec().description).to_owned())
            .unwrap_or_default();
        println!(
            "{}  {}  {}",
            paint(&hit.key, Style::Bold, colour),
            paint(&format!("{:.2}", hit.score), Style::Dim, colour),
            term::clip(&description, 80)
        );
    }
    Ok(Exit::Success)
}

/// Reads `text` as a JSON value (`-`: standard input); `what` names it in errors
/// (`the arguments of `x``).
fn parse_json(text: &str, what: &str) -> Result<Value, CliError> {
    let text = if text == "-" {
        let mut read = String::new();
        std::io::stdin().read_to_string(&mut read).map_err(|e| {
            CliError::new(
                Exit::Io,
                format!("{what} could not be read from stdin: {e}"),
            )
        })?;
        read
    } else {
        text.to_owned()
    };
    serde_json::from_str(&text)
        .map_err(|e| CliError::new(Exit::Usage, format!("{what}: not JSON: {e}")))
}

fn context(grants: &[String]) -> ToolContext {
    grants
        .iter()
        .fold(ToolContext::new(), |ctx, grant| ctx.with_grant(grant))
}

async fn call(
    runtime: Runtime,
    key: &str,
    arguments: &str,
    grants: &[String],
    cassette: Option<PathBuf>,
) -> Result<Exit, CliError> {
    let input = parse_json(arguments, &format!("the arguments of `{key}`"))?;
    let mut run = Run::new(&Arc::new(runtime.with_approver(TerminalApprover)));
    if let Some(path) = cassette {
        // Record what was not seen and replay the rest; under CI, only replay.
        let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"));
        let mode = if ci { Mode::Replay } else { Mode::New };
        let opened = Cassette::open(&path, CassetteConfig::new().with_mode(mode))
            .map_err(|e| CliError::new(Exit::BadData, e))?;
        run = run.with_cassette(opened);
    }
    let result = run.call(key, input, &context(grants)).await;
    let finished = match &result {
        Ok(_) => run.finish(),
        Err(e) => run.finish_failed(&e.to_string()),
    };
    finished.map_err(|e| CliError::new(Exit::Io, e))?;
    print_json(&result?)
}

/// Asks on the terminal whether a call may run; with no terminal, refuses.
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let answer = if std::io::stdin().is_terminal() {
            eprint!(
                "`{}` needs approval to run with {}. Run it? [y/N] ",
                request.key,
                canonical(&request.input)
            );
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            let read = std::io::stdin().lock().read_line(&mut line);
            match read {
                Ok(_) if matches!(line.trim(), "y" | "Y" | "yes") => request.approve(),
                _ => request.deny("not approved at the terminal"),
            }
        } else {
            request.deny("the tool needs approval, and there is no terminal to ask")
        };
        Box::pin(std::future::ready(answer))
    }
}

async fn serve(
    runtime: Runtime,
    stdio: bool,
    http: Option<SocketAddr>,
    grants: &[String],
) -> Result<Exit, CliError> {
    let name = program_name(std::env::args_os().next().as_ref());
    let server = McpServer::new(
        Arc::new(runtime),
        Identity::new(name, env!("CARGO_PKG_VERSION")),
        context(grants),
    )
    .map_err(|e| CliError::new(Exit::BadData, e))?;
    match (stdio, http) {
        (_, Some(addr)) => {
            let running = tackle_mcp::serve_http(server, addr)
                .await
                .map_err(|e| CliError::new(Exit::Io, format!("cannot serve on {addr}: {e}")))?;
            eprintln!("serving MCP at {} (Ctrl-C stops)", running.url());
            let stopped = tokio::signal::ctrl_c().await;
            running.shutdown().await;
            stopped.map_err(|e| CliError::new(Exit::Io, e))?;
            Ok(Exit::Success)
        }
        _ => {
            tackle_mcp::serve_stdio(server)
                .await
                .map_err(|e| CliError::new(Exit::Io, e))?;
            Ok(Exit::Success)
        }
    }
}

async fn run_pipeline(
    runtime: Runtime,
    file: &Path,
    input: Option<&str>,
    grants: &[String],
) -> Result<Exit, CliError> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        let exit = if e.kind() == std::io::ErrorKind::NotFound {
            Exit::NotFound
        } else {
            Exit::Io
        };
        CliError::new(exit, format!("{}: {e}", file.display()))
    })?;
    let pipeline = Pipeline::from_yaml(&text)
        .map_err(|e| CliError::new(Exit::BadData, format!("{}: {e}", file.display())))?;
    let state = match input {
        Some(text) => parse_json(text, "the pipeline's input")?,
        None => json!({}),
    };
    let run = Run::new(&Arc::new(runtime.with_approver(TerminalApprover)));
    match pipeline.run(&run, state, &context(grants)).await {
        Ok(state) => print_json(&state),
        Err(e) => {
            let exit = match &e {
                PipelineError::UnknownTool { .. } => Exit::NotFound,
                PipelineError::Parse { .. }
                | PipelineError::BadNode { .. }
                | PipelineError::DuplicateNode(_) => Exit::BadData,
                PipelineError::Denied { .. } => Exit::Refused,
                _ => Exit::Failure,
            };
            Err(CliError::new(exit, format!("{}: {e}", file.display())))
        }
    }
}
