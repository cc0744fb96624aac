"""The official Python SDK's MCP client, driven by a benchmark over its stdin.

Usage: python mcp_stdio_client.py TOOL COMMAND [ARGS...]

Starts COMMAND as an MCP server over stdio (the SDK's `stdio_client`), initializes,
prints "ready", then for each line N on stdin calls TOOL with {"a": 2, "b": 3} N times,
one after another, and prints "done". benches/mcp_python.rs times the batches.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    tool, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    loop = asyncio.get_running_loop()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            print("ready", flush=True)
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line.strip():
                    break
                for _ in range(int(line)):
                    result = await session.call_tool(tool, {"a": 2, "b": 3})
                    if result.is_error:
                        print(f"error: {result.content}", flush=True)
                        return
                print("done", flush=True)


asyncio.run(main())
