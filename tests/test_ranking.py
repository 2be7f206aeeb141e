"""Ranking cases a person meets typing as they think (issue 19): symbols from code kept
whole, typos corrected into the fields they match. A real vault and a real index."""

import random

import pytest

from vaultd.config import Config
from vaultd.vault import Vault


@pytest.fixture(scope="module")
def common_words(tmp_path_factory):
    """Forty notes full of 'denote', 'link' and 'description' (words most notes hold, as in
    a vault about Denote), and two that hold the symbol `denote-link-description` once."""
    root = tmp_path_factory.mktemp("rank") / "vault"
    root.mkdir()
    rnd = random.Random(1)
    filler = "the of notes and a to in is for with on that this by file".split()
    for i in range(40):
        words = [rnd.choice(filler) for _ in range(300)]
        for w in ("denote", "link", "description", "foo", "bar"):
            for _ in range(rnd.randint(1, 6)):
                words.insert(rnd.randrange(len(words)), w)
        text = " ".join(words).replace("foo bar", "foo the bar").replace("link description", "link the description")
        (root / f"note{i:02d}.md").write_text(f"# Denote note {i}\n\n" + text + "\n")  # parts, never the symbol
    for i, sym in ((1, "denote-link-description"), (2, "denote-link-description"), (3, "foo_bar")):
        words = [rnd.choice(filler) for _ in range(300)]
        words.insert(150, sym)
        (root / f"sym{i}.md").write_text(f"# Formatting {i}\n\n" + " ".join(words) + "\n")
    v = Vault(Config(vault=str(root), state_dir=str(root.parent / "state")).load())
    v.reconcile()
    yield v
    v.close()


def _paths(v: Vault, q: str, n: int = 10) -> list[str]:
    return [h["path"] for h in v.search(q, n)["hits"]]


@pytest.mark.parametrize("q,first", [("denote-link-description", {"sym1.md", "sym2.md"}), ("foo_bar", {"sym3.md"}),
                                     ("format with denote-link-description", {"sym1.md", "sym2.md"})])
def test_a_symbol_is_found_whole_before_its_parts(common_words, q, first):
    got = _paths(common_words, q)
    assert set(got[: len(first)]) == first, got
    assert len(got) == 10, "its parts still match"


def test_the_symbol_line_is_the_snippet(common_words):
    hit = common_words.search("denote-link-description", 1)["hits"][0]
    assert any("denote-link-description" in s["text"] for s in hit["snippets"]), hit
