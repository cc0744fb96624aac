"""A bare MCP server over stdio (no SDK: JSON-RPC lines written by hand), for attacks
on the importer. Its behaviour comes from the environment:

* RAW_TOOLS=N: `tools/list` lists N tools `t0` .. `t<N-1>` (without it, two:
  `half` and `echo`), in pages of RAW_PAGE (default: all in one);
* RAW_INIT_DELAY=s: `initialize` is answered after s seconds;
* RAW_LIST_DELAY=s: each `tools/list` page is answered after s seconds;
* RAW_ENDLESS=1: every page names a next one (the listing never ends).

`tools/call` of `half` writes the first half of its answer's line and no more (no
newline); any other tool answers with the text it was given.
"""

import json
import os
import sys
import time

NAMED = "RAW_TOOLS" not in os.environ
TOOLS = 2 if NAMED else int(os.environ["RAW_TOOLS"])
PAGE = int(os.environ.get("RAW_PAGE", "0")) or max(TOOLS, 1)
INIT_DELAY = float(os.environ.get("RAW_INIT_DELAY", "0"))
LIST_DELAY = float(os.environ.get("RAW_LIST_DELAY", "0"))
ENDLESS = os.environ.get("RAW_ENDLESS") == "1"

out = sys.stdout


def write(text):
    out.write(text)
    out.flush()


def answer(id, result):
    write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")


def tool(n):
    return {
        "name": ["half", "echo"][n] if NAMED else f"t{n}",
        "description": f"Tool number {n}.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
        },
    }


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    method = message.get("method")
    id = message.get("id")
    if id is None:
        continue
    if method == "initialize":
        time.sleep(INIT_DELAY)
        answer(
            id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1.0.0"},
            },
        )
    elif method == "tools/list":
        time.sleep(LIST_DELAY)
        start = int((message.get("params") or {}).get("cursor") or 0)
        end = min(start + PAGE, TOOLS)
        result = {"tools": [tool(n) for n in range(start, end)]}
        if ENDLESS:
            result = {"tools": [], "nextCursor": str(start + 1)}
        elif end < TOOLS:
            result["nextCursor"] = str(end)
        answer(id, result)
    elif method == "tools/call":
        params = message.get("params") or {}
        if params.get("name") == "half":
            whole = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": id,
                    "result": {"content": [{"type": "text", "text": "cut " * 20}]},
                }
            )
            write(whole[: len(whole) // 2])
            continue
        text = (params.get("arguments") or {}).get("text", "")
        answer(id, {"content": [{"type": "text", "text": text}]})
    elif method == "ping":
        answer(id, {})
    else:
        write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32601, "message": "no such method"},
                }
            )
            + "\n"
        )
