//! An agent step's cost in instructions, for `valgrind --tool=callgrind` (or `perf
//! stat` where the machine has counters): a loop of one kind of two-step run, with
//! nothing else in the process to measure. The same work as `benches/react.rs`, on a
//! current-thread runtime.
//!
//! ```text
//! cargo build --release -p tackle-suite --example agent_profile
//! valgrind --tool=callgrind target/release/examples/agent_profile agent 2000
//! valgrind --tool=callgrind target/release/examples/agent_profile agent 4000
//! valgrind --tool=callgrind target/release/examples/agent_profile baseline 2000
//! valgrind --tool=callgrind target/release/examples/agent_profile baseline 4000
//! ```
//!
//! `agent` is `Agent::run` (the model called through the run's door, then the tool,
//! then the model again, the answer checked); `baseline` is the bench's by-hand
//! baseline (the same two model calls directly, the tool call through the door). The
//! difference of two counts, divided by the difference of their runs, is one run's
//! instructions, start-up taken out; the agent's minus the baseline's, halved, is the
//! loop's overhead per step. `docs/performance.md` gives the figures.

#[path = "../benches/support/react.rs"]
mod support;

use std::hint::black_box;
use std::sync::Arc;

use support::{add, model};
use tackle::agent::model::{ChatModel, ChatRequest, FunctionModel, Message};
use tackle::agent::react::ReactSkill;
use tackle::{Agent, Run, Runtime, ToolContext};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "agent".to_owned());
    let count: u64 = args.next().map_or(Ok(1_000), |n| n.parse())?;
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let runtime = Arc::new(Runtime::from_inventory()?);
    let closure: Arc<dyn ChatModel> = Arc::new(FunctionModel::new("bench", model));
    // As in the bench: the caller grants the model's permission itself.
    let ctx = ToolContext::new().with_grant("llm:*");
    let start = std::time::Instant::now();
    match kind.as_str() {
        "agent" => {
            let agent = Agent::with_model(closure)
                .tools([add::KEY])
                .instructions("s");
            tokio_rt.block_on(async {
                for _ in 0..count {
                    let run = Run::new(&runtime);
                    black_box(agent.run(&run, "add 2 and 3").context(&ctx).await?);
                }
                Ok::<_, Box<dyn std::error::Error>>(())
            })?;
        }
        "baseline" => {
            let skill = ReactSkill::new(Arc::clone(&closure), runtime.registry(), &["bench.add"])?;
            tokio_rt.block_on(async {
                for _ in 0..count {
                    let mut request = ChatRequest {
                        messages: vec![Message::system("s"), Message::user("add 2 and 3")],
                        tools: skill.tools(),
                        response_schema: None,
                    };
                    let first = closure.complete(&request).await?;
                    let call = first.tool_calls.first().ok_or("the model called no tool")?;
                    let out = runtime
                        .call("bench.add", call.arguments.clone(), &ctx)
                        .await?;
                    request.messages.push(Message::assistant(
                        first.text.clone(),
                        first.tool_calls.clone(),
                    ));
                    request
                        .messages
                        .push(Message::tool(&call.id, out.to_string()));
                    black_box(closure.complete(&request).await?);
                }
                Ok::<_, Box<dyn std::error::Error>>(())
            })?;
        }
        other => return Err(format!("unknown kind `{other}`: agent or baseline").into()),
    }
    eprintln!(
        "{kind}: {count} runs in {:?} ({:?} a run)",
        start.elapsed(),
        start.elapsed() / u32::try_from(count.max(1)).unwrap_or(u32::MAX)
    );
    Ok(())
}
