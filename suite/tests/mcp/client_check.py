"""Drives a tackle MCP server with the official Python SDK's client.

Usage: python client_check.py COMMAND [ARGS...]

Starts COMMAND as an MCP server over stdio, lists its tools, calls them with good and
bad arguments, and prints what came back as one JSON object on stdout. The Rust test
(tests/mcp_interop.rs) checks it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def wire(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = wire(init.server_info)
            out["capabilities"] = wire(init.capabilities)
            tools = await session.list_tools()
            out["tools"] = [wire(t) for t in tools.tools]
            out["good"] = wire(
                await session.call_tool("units.convert", {"value": 5, "from": "km", "to": "mi"})
            )
            out["invalid"] = wire(
                await session.call_tool("units.convert", {"value": "five", "from": "km", "to": "mi"})
            )
            out["failing"] = wire(
                await session.call_tool("units.convert", {"value": 1, "from": "km", "to": "parsec"})
            )
            out["saved"] = wire(await session.call_tool("notes.save", {"text": "buy milk"}))
            out["found"] = wire(await session.call_tool("notes.search", {"word": "MILK"}))
            progress = []

            async def on_progress(done, total, message):
                progress.append([done, total])

            out["report"] = wire(
                await session.call_tool(
                    "report.render", {"title": "Q3", "sections": 3}, progress_callback=on_progress
                )
            )
            out["progress"] = progress
            try:
                unknown = await session.call_tool("no.such", {})
                out["unknown"] = wire(unknown)
            except Exception as error:  # the SDK raises on a JSON-RPC error
                out["unknown"] = {"exception": str(error)}
    print(json.dumps(out))


asyncio.run(main())
