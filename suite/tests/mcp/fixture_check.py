"""Drives the conformance fixture server (examples/mcp_conformance.rs) with the
official Python SDK's client, over stdio.

Usage: python fixture_check.py COMMAND [ARGS...]

Lists its tools, resources, templates and prompts; reads resources; renders prompts;
asks for completions; calls tools that log, report progress, ask the client's model
(sampling) and ask the user (elicitation), answering both from here. Prints what came
back as one JSON object on stdout; tests/mcp_interop.rs checks it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def wire(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def sampling(context, params):
    asked = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"echo: {asked}"),
        model="python-check",
        stop_reason="endTurn",
    )


async def elicitation(context, params):
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


logs = []


async def logging(params):
    logs.append(wire(params))


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read,
            write,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            logging_callback=logging,
        ) as session:
            init = await session.initialize()
            out["capabilities"] = wire(init.capabilities)
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["resources"] = [wire(r) for r in (await session.list_resources()).resources]
            out["templates"] = [wire(t) for t in (await session.list_resource_templates()).resource_templates]
            out["prompts"] = [wire(p) for p in (await session.list_prompts()).prompts]
            out["text"] = wire(await session.read_resource("test://static-text"))
            out["binary"] = wire(await session.read_resource("test://static-binary"))
            out["template"] = wire(await session.read_resource("test://template/42/data"))
            out["prompt"] = wire(
                await session.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            )
            out["completion"] = wire(
                await session.complete(
                    types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
                    {"name": "id", "value": "4"},
                )
            )
            await session.set_logging_level("info")
            out["logged"] = wire(await session.call_tool("test_tool_with_logging", {}))
            out["sampled"] = wire(await session.call_tool("test_sampling", {"prompt": "Hi there"}))
            out["elicited"] = wire(await session.call_tool("test_elicitation", {"message": "Who are you?"}))
            progress = []

            async def on_progress(done, total, message):
                progress.append([done, total])

            await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            out["progress"] = progress
            await asyncio.sleep(0.2)
            out["logs"] = logs
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
