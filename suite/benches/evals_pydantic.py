"""The evals bench's comparator: the dataset of `suite/benches/evals.rs` on pydantic-evals.

    .venv/bin/python suite/benches/evals_pydantic.py [--cases N] [--concurrency C]
                                                      [--trajectory spans|messages]

(`scripts/pydantic-evals` installs what it needs into `.venv`; `cargo bench -p
tackle-suite --bench evals` runs it three times in the same run as tackle, then once
with `--trajectory messages` and once with `--concurrency 0`.)

The dataset: N cases (default 1,000); case i is named "order i", asks "Price order i.",
and expects the answer "Order i costs T cents." (T below) after the tool calls
lookup(order=i) then compute(items=i % 7 + 1).

The agent: a pydantic-ai `Agent` over `FunctionModel` (pydantic_ai.models.function) whose
function decides from the messages alone, and two pure tools (`async def`, so nothing
leaves the event loop):
  lookup(order) -> items = order % 7 + 1
  compute(items) -> cents = items * 250 + 490
Step 1, no tool result yet: call lookup with the order number read from the prompt;
step 2, the last result is lookup's: call compute with it; step 3, the last result is
compute's: answer the text. The model function suspends once a call
(`asyncio.sleep(0)`, as a model over the network does, and as the Rust side's model
does), so the cases running at once are alive at once.

The evaluators (the same three as the Rust side):
  * `EqualsExpected` (pydantic-evals');
  * a trajectory match and a tool-call budget:
    - `--trajectory spans` (the default): pydantic-evals' own agentic evaluators,
      `TrajectoryMatch(expected_trajectory=['lookup', 'compute'], order='exact')` and
      `MaxToolCalls(max_calls=2)`. They read the case's OpenTelemetry spans, so the
      agent is instrumented (`agent.instrument = InstrumentationSettings(include_content=False)`:
      tool names are all they read, and leaving the messages out of the spans is the
      cheapest set-up that works) under an OpenTelemetry SDK `TracerProvider` (no
      exporter: pydantic-evals adds its in-memory one). They compare tool names only,
      where the Rust side's `TrajectoryMatch` (strict) compares the arguments too.
    - `--trajectory messages`: no OpenTelemetry; the task writes the tool calls it
      reads from the run's messages into the case's attributes (`set_eval_attribute`),
      and two evaluators of this file compare them, names and arguments, with the
      case's expected calls (its metadata) and count them.
  Each case's `TrajectoryMatch` scores 1.0 and its two assertions pass, checked.

`dataset.evaluate(task, max_concurrency=C, progress=False)`: C = 8 (the Rust side's
`Eval` default, which the bench uses); `--concurrency 0` gives pydantic-evals'
default, every case at once.

One process measures once: a warm-up (imports done, a 20-case evaluation), then
  1. a SPEED pass without tracemalloc: wall time of `evaluate` -> cases/s; the growth
     of the process's RSS high-water mark (ru_maxrss) over it -> RSS bytes per case;
  2. a MEMORY pass with tracemalloc (which slows Python down, so it is never timed):
     tracemalloc's peak during `evaluate`, the report alive at its end -> bytes per case.
Output: one JSON line (cases, seconds, cases_per_s, bytes_per_case,
rss_growth_bytes_per_case, the settings and the versions).
"""
import argparse
import asyncio
import gc
import importlib.metadata as metadata
import json
import platform
import re
import resource
import sys
import time
import tracemalloc
from dataclasses import dataclass

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset, set_eval_attribute
from pydantic_evals.evaluators import (
    EvaluationReason,
    Evaluator,
    EvaluatorContext,
    EqualsExpected,
    MaxToolCalls,
    TrajectoryMatch,
)

PROMPT = "Price order {i}."
PROMPT_RE = re.compile(r"Price order (\d+)\.")
WARMUP_CASES = 20


def items_of(order: int) -> int:
    return order % 7 + 1


def cents_of(items: int) -> int:
    return items * 250 + 490


def answer_of(order: int) -> str:
    return f"Order {order} costs {cents_of(items_of(order))} cents."


# --- the agent ----------------------------------------------------------------------------

def decide(messages: list[ModelMessage]) -> ModelResponse:
    prompt, last_return = None, None
    for message in messages:  # the prompt and the tool results live in ModelRequests
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    last_return = part
                elif isinstance(part, UserPromptPart):
                    prompt = part.content
    order = int(PROMPT_RE.fullmatch(prompt).group(1))
    if last_return is None:
        return ModelResponse(parts=[ToolCallPart(tool_name="lookup", args={"order": order})])
    if last_return.tool_name == "lookup":
        return ModelResponse(parts=[ToolCallPart(tool_name="compute", args={"items": last_return.content})])
    if last_return.tool_name == "compute":
        return ModelResponse(parts=[TextPart(content=f"Order {order} costs {last_return.content} cents.")])
    raise AssertionError(f"unexpected tool result: {last_return!r}")


async def model_function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(0)  # suspends once, as a model over the network does
    return decide(messages)


def build_agent(spans: bool) -> Agent:
    agent = Agent(FunctionModel(model_function))
    if spans:
        from pydantic_ai.models.instrumented import InstrumentationSettings

        agent.instrument = InstrumentationSettings(include_content=False)

    @agent.tool_plain
    async def lookup(order: int) -> int:
        """How many items an order holds."""
        return items_of(order)

    @agent.tool_plain
    async def compute(items: int) -> int:
        """The price of that many items, delivery included, in cents."""
        return cents_of(items)

    return agent


def tool_calls_of(messages: list[ModelMessage]) -> list[tuple[str, dict]]:
    return [
        (part.tool_name, part.args_as_dict())
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]


# --- the evaluators of `--trajectory messages` (pydantic-evals' read spans) --------------

@dataclass
class CallsMatch(Evaluator):
    """The tool calls made (names and arguments, in order) equal the case's expected ones."""

    def evaluate(self, ctx: EvaluatorContext) -> EvaluationReason:
        made = ctx.attributes.get("tool_calls", [])
        expected = ctx.metadata["expected_calls"]
        if made == expected:
            return EvaluationReason(value=1.0, reason=f"the {len(expected)} expected call(s), in order")
        return EvaluationReason(value=0.0, reason=f"made {made!r}, expected {expected!r}")


@dataclass
class MaxCalls(Evaluator):
    """At most `max_calls` tool calls."""

    max_calls: int

    def evaluate(self, ctx: EvaluatorContext) -> EvaluationReason:
        made = len(ctx.attributes.get("tool_calls", []))
        return EvaluationReason(value=made <= self.max_calls, reason=f"{made} tool call(s), budget={self.max_calls}")


# --- the dataset ----------------------------------------------------------------------------

def build_dataset(n: int, spans: bool) -> Dataset:
    cases = [
        Case(
            name=f"order {i}",
            inputs=PROMPT.format(i=i),
            expected_output=answer_of(i),
            metadata=None if spans else {
                "expected_calls": [("lookup", {"order": i}), ("compute", {"items": items_of(i)})],
            },
        )
        for i in range(n)
    ]
    if spans:
        evaluators = [
            EqualsExpected(),
            TrajectoryMatch(expected_trajectory=["lookup", "compute"], order="exact"),
            MaxToolCalls(max_calls=2),
        ]
    else:
        evaluators = [EqualsExpected(), CallsMatch(), MaxCalls(max_calls=2)]
    return Dataset(name="orders", cases=cases, evaluators=evaluators)


def check(report, n: int) -> None:
    """Fails loudly unless every case answered right and passed every evaluator."""
    if report.failures:
        sys.exit(f"{len(report.failures)} case(s) failed: {report.failures[0].error_message}")
    if len(report.cases) != n:
        sys.exit(f"{len(report.cases)} cases reported, {n} expected")
    for case in report.cases:
        bad = [f"{k}={v.value!r} ({v.reason})" for k, v in case.assertions.items() if v.value is not True]
        bad += [f"{k}={v.value!r} ({v.reason})" for k, v in case.scores.items() if v.value != 1.0]
        if len(case.assertions) + len(case.scores) != 3 or bad or case.evaluator_failures:
            sys.exit(f"case {case.name}: {bad or case.evaluator_failures or 'not 3 evaluations'}")


# --- one measurement --------------------------------------------------------------------------

def maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


async def measure(n: int, concurrency: int | None, spans: bool) -> dict:
    agent = build_agent(spans)

    async def order_task(prompt: str) -> str:
        result = await agent.run(prompt)
        if not spans:
            set_eval_attribute("tool_calls", tool_calls_of(result.all_messages()))
        return result.output

    async def evaluate(dataset: Dataset):
        return await dataset.evaluate(order_task, max_concurrency=concurrency, progress=False)

    check(await evaluate(build_dataset(WARMUP_CASES, spans)), WARMUP_CASES)

    dataset = build_dataset(n, spans)
    gc.collect()  # speed pass: no tracemalloc
    rss_before = maxrss_bytes()
    started = time.perf_counter()
    report = await evaluate(dataset)
    seconds = time.perf_counter() - started
    rss_growth = maxrss_bytes() - rss_before
    check(report, n)
    del report

    gc.collect()  # memory pass: tracemalloc on, not timed
    tracemalloc.start()
    report = await evaluate(dataset)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    check(report, n)

    return {
        "seconds": round(seconds, 4),
        "cases_per_s": round(n / seconds, 1),
        "bytes_per_case": round(peak / n),
        "rss_growth_bytes_per_case": round(rss_growth / n),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000, help="cases in the dataset (default 1000)")
    ap.add_argument("--concurrency", type=int, default=8,
                    help="max_concurrency (default 8, as the Rust side; 0: pydantic-evals' default, all at once)")
    ap.add_argument("--trajectory", choices=["spans", "messages"], default="spans",
                    help="pydantic-evals' span-reading evaluators (default) or this file's, reading the messages")
    args = ap.parse_args()
    if args.cases < 1 or args.concurrency < 0:
        ap.error("--cases must be at least 1 and --concurrency at least 0")
    spans = args.trajectory == "spans"
    if spans:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())
    concurrency = args.concurrency or None
    result = asyncio.run(measure(args.cases, concurrency, spans))
    print(json.dumps({
        "bench": "pydantic-evals",
        "cases": args.cases,
        "concurrency": concurrency,
        "trajectory": args.trajectory,
        **result,
        "pydantic_evals": metadata.version("pydantic-evals"),
        "pydantic_ai": metadata.version("pydantic-ai-slim"),
        "opentelemetry_sdk": metadata.version("opentelemetry-sdk") if spans else None,
        "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
