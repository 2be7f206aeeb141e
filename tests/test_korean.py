"""Korean queries as people type them: Hangul typos corrected by their letters (jamo) into
the vault's own words. A real vault and a real index."""

import os

import pytest

from vaultd.config import Config
from vaultd.query.ranking import Vocabulary, one_jamo_away
from vaultd.vault import Vault


@pytest.fixture(scope="module")
def patterns(tmp_path_factory):
    """Notes on design patterns: the observer pattern's note is old, the others newer and
    full of `패턴` (pattern)."""
    root = tmp_path_factory.mktemp("ko-typo") / "vault"
    root.mkdir()
    (root / "옵저버 패턴.md").write_text("# 옵저버 패턴\n\n주체의 상태가 바뀌면 구독자들에게 알린다.\n")
    os.utime(root / "옵저버 패턴.md", (1e9, 1e9))  # written long ago: the others are newer
    for name in ("전략 패턴", "싱글턴 패턴", "디자인 패턴 목록", "패턴 매칭"):
        (root / f"{name}.md").write_text(f"# {name}\n\n" + "패턴을 쓰는 이유와 패턴의 구조. " * 4 + "\n")
    (root / "전량 매도.md").write_text("# 전량 매도\n\n주식을 모두 팔았다.\n")
    for i in range(6):
        (root / f"일기 {i}.md").write_text(f"# {i}일\n\n오늘은 산책을 했다.\n")
    v = Vault(Config(vault=str(root), state_dir=str(root.parent / "state")).load())
    v.reconcile()
    yield v
    v.close()


def _paths(v, q, n=10):
    return [h["path"] for h in v.search(q, n)["hits"]]


@pytest.mark.parametrize("q", ["옵져버 패턴", "옵져버", "옵저보 패턴", "옵져버를"])
def test_a_hangul_typo_finds_the_word_one_letter_away(patterns, q):
    """저/져 (one vowel), 버/보: one jamo changed is one edit; a particle after it is kept apart."""
    got = _paths(patterns, q)
    assert got and got[0] == "옵저버 패턴.md", got


def test_the_correction_is_highlighted(patterns):
    hit = patterns.search("옵져버 패턴", 1)["hits"][0]
    assert any("옵저버" in s["text"] for s in hit["snippets"]), hit


def test_a_word_the_notes_hold_is_not_corrected(patterns):
    """`전략` (strategy) is held: `전량` (all of it), one jamo away, is not searched for."""
    assert "전량 매도.md" not in _paths(patterns, "전략")


def test_one_jamo_away():
    assert "옵저버" in one_jamo_away("옵져버")  # a medial changed
    assert "패턴" in one_jamo_away("패턱")  # a final changed
    assert "각" in one_jamo_away("가") and "가" in one_jamo_away("각")  # a final added, dropped
    assert "까" in one_jamo_away("가")  # an initial changed
    assert len(one_jamo_away("가a")) == 18 + 20 + 27 and "가" not in one_jamo_away("가")


def test_a_hangul_correction_is_the_nearest_then_most_used_word():
    vocab = Vocabulary(["옵저버 패턴"], ["패턱 둘", "패턱 셋"])
    assert vocab.correct_hangul("옵져버") == "옵저버"
    assert vocab.correct_hangul("옵져버를") == "옵저버"  # less its particle
    assert vocab.correct_hangul("패턴") is None  # a word of the vocabulary is no typo
    assert vocab.correct_hangul("패턷") == "패턱"  # used twice, 패턴 once
    assert vocab.correct_hangul("가나다") is None
