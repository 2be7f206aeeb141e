"""Text forms shared by the daemon and vaultq. Standard library only (vaultq imports it)."""


def context_item(item: dict) -> str:
    """How a context item is printed, and so what its cost counts: a provenance header
    (`## path:first-last title (why)`), then its lines."""
    why = f" ({item['why']})" if item.get("why") else ""
    return f"## {item['path']}:{item['first']}-{item['last']} {item['title']}{why}\n{item['text']}\n"
