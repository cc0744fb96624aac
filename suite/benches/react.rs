//! Framework overhead of a ReAct step: a two-step run (one tool call, then the answer)
//! with a closure model and a pure tool, against an in-run baseline that does the
//! same model calls and the same door call by hand. The difference, halved, is the
//! overhead per step (target: within 2 µs; see `docs/performance.md`).
//!
//! `react/streamed_step`: the same two-step run with a model that streams each reply
//! in pieces (16 text deltas, and the call's arguments in 4), run with an event sink
//! that receives every delta, against the same run with no sink (the baseline: the
//! model is not asked to stream). The difference, halved, is the cost of streaming
//! per step.
//!
//! The runs are an [`Agent`]'s, as a program makes them: `agent.run(&run, task)`, the
//! model and the tool calls through the run's door (the agent's loop for the runtime
//! made on its first run and kept).

#[path = "support/react.rs"]
mod support;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use support::{add, model};
use tackle::agent::model::{
    ChatModel, ChatRequest, DeltaSink, FunctionModel, Message, ModelFuture,
};
use tackle::agent::react::ReactSkill;
use tackle::events::{event_queue, ModelDelta};
use tackle::{Agent, Run, Runtime, ToolContext};

/// [`model`], streaming each reply in pieces when asked to.
struct Streaming;

impl ChatModel for Streaming {
    fn provider(&self) -> &str {
        "function"
    }

    fn model(&self) -> &str {
        "bench"
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(std::future::ready(model(request)))
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest, sink: DeltaSink<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let reply = model(request)?;
            let text = format!("{:<16}", reply.text);
            for piece in text.as_bytes().chunks(text.len().div_ceil(16)) {
                sink(ModelDelta::Text(
                    String::from_utf8_lossy(piece).into_owned(),
                ));
            }
            for (index, call) in reply.tool_calls.iter().enumerate() {
                let arguments = call.arguments.to_string();
                for (i, piece) in arguments
                    .as_bytes()
                    .chunks(arguments.len().div_ceil(4))
                    .enumerate()
                {
                    sink(ModelDelta::ToolCall {
                        index,
                        id: (i == 0).then(|| call.id.clone()),
                        name: (i == 0).then(|| call.name.clone()),
                        arguments: String::from_utf8_lossy(piece).into_owned(),
                    });
                }
            }
            Ok(reply)
        })
    }
}

fn react(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let closure: Arc<dyn ChatModel> = Arc::new(FunctionModel::new("bench", model));
    let skill =
        ReactSkill::new(Arc::clone(&closure), runtime.registry(), &["bench.add"]).expect("skill");
    // The loop's model calls go through the door as the caller's (`llm:function`);
    // the tool requires nothing.
    let ctx = ToolContext::new().with_grant("llm:*");
    let by_hand = FunctionModel::new("bench", model);
    let mut group = c.benchmark_group("react/two_steps");
    group.bench_function("model calls and the door call by hand (baseline)", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let mut request = ChatRequest {
                    messages: vec![Message::system("s"), Message::user("add 2 and 3")],
                    tools: skill.tools(),
                    response_schema: None,
                };
                let first = by_hand.complete(&request).await.expect("model");
                let call = &first.tool_calls[0];
                let out = runtime
                    .call("bench.add", call.arguments.clone(), &ctx)
                    .await
                    .expect("tool");
                request.messages.push(Message::assistant(
                    first.text.clone(),
                    first.tool_calls.clone(),
                ));
                request
                    .messages
                    .push(Message::tool(&call.id, out.to_string()));
                black_box(by_hand.complete(&request).await.expect("model"))
            })
        })
    });
    let agent = Agent::with_model(Arc::clone(&closure))
        .tools([add::KEY])
        .instructions("s");
    group.bench_function("Agent::run", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                // Each iteration is one run.
                let run = Run::new(&runtime);
                black_box(
                    agent
                        .run(&run, "add 2 and 3")
                        .context(&ctx)
                        .await
                        .expect("run"),
                )
            })
        })
    });
    group.finish();

    let streaming = Agent::new(Streaming).tools([add::KEY]).instructions("s");
    let mut group = c.benchmark_group("react/streamed_step");
    group.bench_function("two steps, not streamed (baseline)", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let run = Run::new(&runtime);
                black_box(
                    streaming
                        .run(&run, "add 2 and 3")
                        .context(&ctx)
                        .await
                        .expect("run"),
                )
            })
        })
    });
    let (sink, mut events) = event_queue(1024);
    group.bench_function("two steps, streamed to an event sink", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let run = Run::new(&runtime).with_events(sink.clone());
                let state = streaming
                    .run(&run, "add 2 and 3")
                    .context(&ctx)
                    .await
                    .expect("run");
                black_box(events.drain());
                black_box(state)
            })
        })
    });
    group.finish();
}

criterion_group!(benches, react);
criterion_main!(benches);
