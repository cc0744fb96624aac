"""A small MCP server made with the official Python SDK, for tackle's importer.

Usage: python py_server.py [--hang] [--collide]

With --hang, the `slow` tool never answers, so the importer's call timeout shows.
With --collide, a tool named `book.table` joins `book_table`: both map to one
registry key, which the importer must refuse, naming both.
"""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer(name="py-weather", version="1.2.0")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def forecast(city: str, days: int = 1) -> dict:
    """Forecast for a city."""
    return {"city": city, "days": days, "summary": f"{days} day(s) of sun in {city}"}


@server.tool()
def book_table(restaurant: str, people: int) -> str:
    """Book a table."""
    if people > 12:
        raise ToolError("tables seat at most 12")
    return f"booked {restaurant} for {people}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    if "--hang" in sys.argv:
        time.sleep(3600)
    time.sleep(seconds)
    return "done"


@server.tool()
def crash() -> str:
    """Exit the server process at once, as a crashing server would."""
    os._exit(3)


if "--collide" in sys.argv:

    @server.tool(name="book.table")
    def book_table_dotted(restaurant: str) -> str:
        """Book a table (a second tool whose name maps to the same key)."""
        return f"booked {restaurant}"


server.run()
