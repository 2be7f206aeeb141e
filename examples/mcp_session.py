"""An MCP session with `vaultd mcp`, as an agent has it: the tools listed, then a search
and a context call. Uses the official MCP SDK's own client (installed with vaultd).

    .venv/bin/python examples/mcp_session.py "가치관이 뭐야"  [vaultd mcp options, e.g. --vault ~/notes]

Run it with the Python vaultd is installed in (the `mcp` SDK is there). It starts the
`vaultd` beside that Python (else the one on PATH) with this shell's environment, so the
server finds the daemon as vaultq does from here (the SDK alone would pass only HOME, PATH
and a few more, and no XDG_RUNTIME_DIR).
"""

import asyncio
import os
import shutil
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(query: str, options: list[str]) -> None:
    beside = Path(sys.executable).with_name("vaultd")
    vaultd = str(beside) if beside.exists() else shutil.which("vaultd") or "vaultd"
    server = StdioServerParameters(command=vaultd, args=["mcp", *options], env=dict(os.environ))
    async with Client(server) as client:
        for tool in (await client.list_tools()).tools:
            print(f"tool {tool.name}: {tool.description.split('. ')[0].split(' (')[0]}")
        for name, args in (("search", {"query": query, "limit": 3}), ("context", {"query": query, "budget": 300})):
            print(f"\n> {name} {args}")
            result = await client.call_tool(name, args)
            print(result.content[0].text)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} QUERY [vaultd mcp options, e.g. --vault ~/notes]", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
