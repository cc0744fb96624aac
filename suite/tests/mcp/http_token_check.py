"""Drives a tackle MCP server over streamable HTTP with the official Python SDK's client,
with and without bearer tokens, and from a foreign Origin.

Usage: python http_token_check.py URL WRITER_TOKEN READER_TOKEN

Prints one JSON object: what each client could do. The Rust test
(tests/mcp_interop.rs) checks it.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def session_with(url, token, origin=None, statuses=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if origin:
        headers["Origin"] = origin
    client = create_mcp_http_client(headers=headers)

    async def note(response):
        if statuses is not None:
            statuses.append(response.status_code)

    client.event_hooks["response"].append(note)
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                saved = await session.call_tool("notes.save", {"text": "from " + (token or "nobody")})
                return {"is_error": bool(saved.is_error)}


async def attempt(url, token, origin=None):
    statuses = []
    try:
        return await asyncio.wait_for(session_with(url, token, origin, statuses), 20)
    except BaseException as error:  # the SDK raises (in a group) on a 401
        return {"refused": repr(error)[:300], "statuses": statuses}


async def main() -> None:
    url, writer, reader = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {
        "writer": await attempt(url, writer),
        "reader": await attempt(url, reader),
        "none": await attempt(url, None),
        "wrong": await attempt(url, "not-a-token"),
        "foreign_origin": await attempt(url, writer, "http://evil.example"),
    }
    print(json.dumps(out))


asyncio.run(main())
