"""An MCP server (official Python SDK) whose tools change while it runs.

Tools at start: `echo(text)`, `old_tool()` and `grow()`. A call of `grow` removes
`old_tool`, adds `fresh(x)`, replaces `echo` with one that also needs `times`, then
sends `notifications/tools/list_changed` (to the clients that listen for it, and on
the session of a client that opened one).
"""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(name="changing", version="1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
def old_tool() -> str:
    """Here until `grow` is called."""
    return "old"


def fresh(x: int) -> int:
    """Twice x."""
    return 2 * x


def echo_times(text: str, times: int) -> str:
    """Say it back, `times` times."""
    return text * times


@server.tool()
async def grow(ctx: Context) -> str:
    """Change the tools, then say so."""
    server.remove_tool("old_tool")
    server.remove_tool("echo")
    server.add_tool(fresh)
    server.add_tool(echo_times, name="echo")
    # To the clients listening for it (2026-07-28), and on the session (2025-11-25).
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "grown"


server.run()
