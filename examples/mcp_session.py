"""An MCP session with `vaultd mcp`, as an agent has it: the tools listed, then a search
and a context call. Uses the official MCP SDK's own client (installed with vaultd).

    python examples/mcp_session.py "가치관이 뭐야"  [vaultd mcp options, e.g. --vault ~/notes]
"""

import asyncio
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(query: str, options: list[str]) -> None:
    server = StdioServerParameters(command="vaultd", args=["mcp", *options])
    async with Client(server) as client:
        for tool in (await client.list_tools()).tools:
            print(f"tool {tool.name}: {tool.description.split('. ')[0].split(' (')[0]}")
        for name, args in (("search", {"query": query, "limit": 3}), ("context", {"query": query, "budget": 300})):
            print(f"\n> {name} {args}")
            result = await client.call_tool(name, args)
            print(result.content[0].text)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
