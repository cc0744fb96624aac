"""Benchmark pydantic-ai on the fixed agent workload that tackle's Rust benchmark also runs.

    scripts/bench-pydantic-ai [--runs N] [--repeat R] [--sync]

Workload: N agent runs started at once (asyncio.gather) over ONE shared Agent with two
pure tools, add(a, b) and double(x). The model is pydantic-ai's FunctionModel, deciding
from the conversation alone: no tool result yet -> add(a=i, b=1) (i read from the prompt
"Add {i} and 1, then double it."); last result from add -> double(x=result); last result
from double -> "The answer is {result}.". Three model steps per run; every answer is checked.

Each repeat runs in a fresh child process (so the RSS high-water mark starts clean) and does:
  1. a warm-up of a few runs (imports, lazy schema building, caches);
  2. a SPEED pass without tracemalloc: wall time -> runs/s, and ru_maxrss growth;
  3. a MEMORY pass with tracemalloc (which slows Python down, so it is never timed):
     tracemalloc peak / N -> KiB per run.
Output: one JSON line per repeat, a JSON line of medians, then one human summary line.

By default the model function and the tools are `async def`, so nothing leaves the event
loop; the model suspends once a call (`asyncio.sleep(0)`), as one over the network does,
so the N runs are alive at once. Each run checks its answer and lets its result go in its
own task. With --sync they are plain `def`, which pydantic-ai runs on worker threads
(anyio.to_thread), as it does for ordinary sync tools.
"""
import argparse
import asyncio
import gc
import json
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import pydantic_ai
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

PROMPT = "Add {i} and 1, then double it."
PROMPT_RE = re.compile(r"Add (-?\d+) and 1, then double it\.")
WARMUP_RUNS = 10


# --- the model: a pure function of the conversation ------------------------------------

def decide(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt, last_return = None, None
    for message in messages:  # tool results and the prompt live in ModelRequest messages
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    last_return = part
                elif isinstance(part, UserPromptPart):
                    prompt = part.content
    if last_return is None:
        i = int(PROMPT_RE.fullmatch(prompt).group(1))
        return ModelResponse(parts=[ToolCallPart(tool_name="add", args={"a": i, "b": 1})])
    if last_return.tool_name == "add":
        return ModelResponse(parts=[ToolCallPart(tool_name="double", args={"x": last_return.content})])
    if last_return.tool_name == "double":
        return ModelResponse(parts=[TextPart(content=f"The answer is {last_return.content}.")])
    raise AssertionError(f"unexpected tool result: {last_return!r}")


async def decide_async(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    # Suspends once before it answers, as a model over the network does (and as the
    # Rust workload's model does), so the runs started at once are alive at once.
    await asyncio.sleep(0)
    return decide(messages, info)


def build_agent(sync: bool) -> Agent:
    agent = Agent(FunctionModel(decide if sync else decide_async))
    if sync:
        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @agent.tool_plain
        def double(x: int) -> int:
            """Double an integer."""
            return 2 * x
    else:
        @agent.tool_plain
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @agent.tool_plain
        async def double(x: int) -> int:
            """Double an integer."""
            return 2 * x
    return agent


# --- one repeat (runs in a child process) -----------------------------------------------

async def run_one(agent: Agent, i: int) -> None:
    """One run, checked and let go in its own task (as the Rust workload's runs are)."""
    result = await agent.run(PROMPT.format(i=i))
    want = f"The answer is {2 * (i + 1)}."
    if result.output != want:  # fail loudly on any wrong answer
        sys.exit(f"run {i}: got {result.output!r}, want {want!r}")
    if len(result.all_messages()) != 6:  # prompt, 3 model responses, 2 tool returns
        sys.exit(f"run {i}: expected 6 messages, got {len(result.all_messages())}")


async def run_all(agent: Agent, n: int) -> None:
    await asyncio.gather(*(run_one(agent, i) for i in range(n)))


def maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


async def one_repeat(n: int, sync: bool) -> dict:
    agent = build_agent(sync)
    await run_all(agent, WARMUP_RUNS)

    gc.collect()  # speed pass: no tracemalloc
    rss_before = maxrss_kib()
    start = time.perf_counter()
    await run_all(agent, n)
    seconds = time.perf_counter() - start
    rss_growth = maxrss_kib() - rss_before

    gc.collect()  # memory pass: tracemalloc on, not timed
    tracemalloc.start()
    await run_all(agent, n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    return {
        "seconds": round(seconds, 4),
        "runs_per_s": round(n / seconds, 1),
        "tracemalloc_peak_kib_per_run": round(peak / 1024 / n, 2),
        "maxrss_growth_kib_per_run": round(rss_growth / n, 2),
    }


# --- driver -------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000, help="agent runs per pass (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="repeats, each in a fresh process (default 3)")
    ap.add_argument("--sync", action="store_true", help="plain `def` model function and tools (worker threads)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # internal: one repeat
    args = ap.parse_args()
    if args.runs < 1 or args.repeat < 1:
        ap.error("--runs and --repeat must be at least 1")

    if args.child:
        print(json.dumps(asyncio.run(one_repeat(args.runs, args.sync))))
        return

    mode = "sync" if args.sync else "async"
    child = [sys.executable, __file__, "--child", "--runs", str(args.runs)] + (["--sync"] if args.sync else [])
    repeats = []
    for k in range(1, args.repeat + 1):
        out = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
        rep = json.loads(out.strip().splitlines()[-1])
        repeats.append(rep)
        print(json.dumps({"bench": "pydantic-ai", "repeat": k, "runs": args.runs, "mode": mode, **rep}), flush=True)

    def med(key):
        return round(statistics.median(r[key] for r in repeats), 2)

    summary = {
        "bench": "pydantic-ai", "median_of": args.repeat, "runs": args.runs, "mode": mode,
        "pydantic_ai": pydantic_ai.__version__, "python": platform.python_version(),
        "runs_per_s": med("runs_per_s"),
        "tracemalloc_peak_kib_per_run": med("tracemalloc_peak_kib_per_run"),
        "maxrss_growth_kib_per_run": med("maxrss_growth_kib_per_run"),
        "note": "runs/s and RSS from a pass without tracemalloc; peak KiB/run from a separate tracemalloc pass",
    }
    print(json.dumps(summary))
    each = ", ".join(f"{r['runs_per_s']}" for r in repeats)
    print(f"pydantic-ai {summary['pydantic_ai']} ({mode}): {args.runs} runs, "
          f"median {summary['runs_per_s']} runs/s ({args.repeat} repeats: {each}), "
          f"peak {summary['tracemalloc_peak_kib_per_run']} KiB per run (tracemalloc, separate untimed pass), "
          f"max RSS growth {summary['maxrss_growth_kib_per_run']} KiB per run")


if __name__ == "__main__":
    main()
