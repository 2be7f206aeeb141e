"""Every relative link between README.md, docs/*.md, ARCHITECTURE.md, bench/RESULTS.md and
the Claude Code plugin's README leads somewhere: the file (or folder) exists, and a
`#anchor` is a heading of that page, slugged as GitHub slugs it (lower case; letters,
digits, marks, spaces, `-` and `_` kept, other characters dropped; spaces to `-`; a
repeated slug gets `-1`, `-2`...). Links inside code (spans and fences) are text, not
links. Web links are not followed."""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "ARCHITECTURE.md",
         ROOT / "bench" / "RESULTS.md", ROOT / "integrations" / "claude-code" / "README.md"]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The page less its code: fenced blocks and code spans blanked (lines kept)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE.sub(lambda m: " " * len(m.group(0)), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = LINK.sub(lambda m: m.group(1), heading).replace("`", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


@functools.cache
def anchors(page: Path) -> set[str]:
    """Every heading's anchor on a page (its ATX headings outside code)."""
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", FENCE.sub("", page.read_text()), re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """Each relative link of a page that leads nowhere, with why."""
    out = []
    for m in LINK.finditer(prose(page.read_text() if text is None else text)):
        target = m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append(f"{target}: no such file ({dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target}: {dest.name} has no heading #{anchor}")
        elif anchor and dest.suffix != ".md":
            out.append(f"{target}: an anchor into {dest.name}, which is no page")
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_leads_somewhere(page):
    assert page.exists()
    assert broken_links(page) == []


def test_every_manual_page_is_linked_from_the_manual_s_contents_and_the_readme_links_the_manual():
    index = prose((ROOT / "docs" / "README.md").read_text())
    linked = {m.group(2).partition("#")[0] for m in LINK.finditer(index)}
    assert {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"} <= linked
    readme = prose((ROOT / "README.md").read_text())
    assert "docs/README.md" in {m.group(2) for m in LINK.finditer(readme)} or \
        {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"} <= \
        {m.group(2).partition("#")[0] for m in LINK.finditer(readme)}


def test_github_s_slugs():
    assert slug("Agent capture: `remember`") == "agent-capture-remember"
    assert slug("The MCP server: `vaultd mcp`") == "the-mcp-server-vaultd-mcp"
    assert slug("grep, list, resolve") == "grep-list-resolve"
    assert slug("`[semantic]`") == "semantic"
    assert slug("HOT, WARM, COLD and budgeted context") == "hot-warm-cold-and-budgeted-context"
    assert slug("가치관과 선택") == "가치관과-선택"
    assert slug("Any editor: `vaultd lsp`") == "any-editor-vaultd-lsp"


def test_a_link_to_a_missing_page_or_heading_is_seen():
    page = ROOT / "docs" / "agents.md"
    text = page.read_text() + "\nSee [nowhere](nowhere.md), [a heading](query-syntax.md#no-such-heading), " \
                              "[here](#nor-here) and `[code](is-not-a-link.md)`.\n"
    assert broken_links(page, text) == ["nowhere.md: no such file (docs/nowhere.md)",
                                        "query-syntax.md#no-such-heading: query-syntax.md has no heading "
                                        "#no-such-heading",
                                        "#nor-here: agents.md has no heading #nor-here"]
