"""Ranking cases a person meets typing as they think (issue 19): symbols from code kept
whole, typos corrected into the fields they match. A real vault and a real index."""

import os
import random

import pytest

from vaultd.config import Config
from vaultd.vault import Vault


@pytest.fixture(scope="module")
def common_words(tmp_path_factory):
    """Forty notes full of 'denote', 'link' and 'description' (words most notes hold, as in
    a vault about Denote), and two that hold the symbol `denote-link-description` once."""
    root = _folder(tmp_path_factory, "rank")
    rnd, filler = random.Random(1), FILLER
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
    v = _indexed(root)
    yield v
    v.close()


FILLER = "the of notes and a to in is for with on that this by file".split()
"""Words every note holds, around the ones a test is about."""


def _folder(tmp_path_factory, name: str):
    root = tmp_path_factory.mktemp(name) / "vault"
    root.mkdir()
    return root


def _indexed(root) -> Vault:
    """A Vault of the notes in `root`, indexed (its state beside it)."""
    v = Vault(Config(vault=str(root), state_dir=str(root.parent / "state")).load())
    v.reconcile()
    return v


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


@pytest.fixture(scope="module")
def titled(tmp_path_factory):
    """Notes named as Obsidian names them; many mention graphs and views in passing."""
    root = tmp_path_factory.mktemp("typo") / "vault"
    root.mkdir()
    (root / "Graph view.md").write_text("The graph view shows your notes as a network of nodes and links.\n")
    (root / "Canvas.md").write_text("A canvas is an infinite space to lay out notes.\n")
    for name in ("Graph settings", "Graph filters", "View modes", "Views", "Grapher", "Web viewer"):
        (root / f"{name}.md").write_text(f"About {name.lower()}: the graph, and how you view it.\n")
    os.utime(root / "Graph view.md", (1e9, 1e9))  # written long ago: the others are newer
    for i in range(12):
        (root / f"Other {i}.md").write_text(f"Note {i}. A graph of some kind, a view of it; graphs views grapple "
                                            f"grasp grape graphic {i}.\n")
    v = _indexed(root)
    yield v
    v.close()


@pytest.mark.parametrize("q", ["grpah veiw", "graph veiw", "grpah view", "canvs"])
def test_a_title_that_matches_after_correction_ranks_by_the_title_boost(titled, q):
    want = "Canvas.md" if q == "canvs" else "Graph view.md"
    res = titled.search(q, 5)
    assert res["hits"][0]["path"] == want, [h["path"] for h in res["hits"]]
    assert res["hits"][0]["snippets"], "the corrected words are highlighted"


def test_an_exact_word_outranks_its_correction_and_a_prefix(titled):
    assert [h["path"] for h in titled.search("graph view", 1)["hits"]] == ["Graph view.md"]
    got = [h["path"] for h in titled.search("grap", 14)["hits"]]
    assert got and got[0] != "Canvas.md"


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    """Questions typed as sentences: one note answers all of their words in its body; others
    hold one rare word in their title, or the question's stop words in every line."""
    root = tmp_path_factory.mktemp("cover") / "vault"
    (root / "회의록").mkdir(parents=True)
    (root / "Properties.md").write_text(
        "---\naliases: [front matter]\n---\n"
        + "Properties hold structured data. Add them at the top of a note, as YAML between two lines.\n" * 3
        + "Each property has a name, a type and a value: text, list, number, checkbox, date.\n" * 30)
    (root / "Metadata.md").write_text("The metadata cache keeps what Obsidian read from your files.\n")
    (root / "Top bar.md").write_text("The bar at the top of the window holds the tabs.\n")
    (root / "How to ask.md").write_text(("How do I do this? How do I do that? What is the way to do it, and how "
                                         "is it done in the app? ") * 5 + "\n")
    for i in range(12):
        (root / f"Filler {i}.md").write_text(f"Entry {i} about the app, a page of the day, how it is and what it was.\n")
    (root / "Pins A.md").write_text("Pin it to the top of the page. Later, write a note.\n")  # same words,
    (root / "Pins B.md").write_text("Pin it to the top of a note. Later, write the page.\n")  # `top of a note`
    (root / "회의록" / "2025-03-02.md").write_text("# 3월 2일\n\n예산과 일정 이야기.\n")
    (root / "일정.md").write_text("# 일정\n\n다음 주 일정.\n")
    v = _indexed(root)
    yield v
    v.close()


@pytest.mark.parametrize("q", ["add properties at the top of a note", "how do I add properties at the top of a note"])
def test_a_note_holding_every_word_outranks_a_title_holding_one(questions, q):
    """Coverage: `Properties.md` holds add, properties, top and note; `Top bar.md` holds `top`
    in its title and `How to ask.md` the stop words over and over."""
    assert _paths(questions, q, 3)[0] == "Properties.md", _paths(questions, q, 3)


def test_stop_words_weigh_little_and_pair_the_words_around_them(questions):
    """`of a` between `top` and `note` still makes them neighbours; notes full of stop words
    (`the app, a note of the day`) do not rank by them."""
    got = _paths(questions, "top of a note")
    assert got.index("Pins B.md") < got.index("Pins A.md"), got
    assert _paths(questions, "how do I")[0] == "How to ask.md", "a query of stop words alone still ranks by them"


def test_a_korean_folder_name_finds_its_notes(questions):
    """Folder names are a field (path_boost) in Korean as in English: `회의록` (minutes) is only
    the folder's name."""
    assert _paths(questions, "회의록") == ["회의록/2025-03-02.md"]


@pytest.fixture(scope="module")
def coverage_vault(tmp_path_factory):
    """Notes that say one of three words over and over (a high score on one word) and notes
    that hold all three once or twice: which rank first is decided by the share of the
    words each holds, not by the score alone."""
    root = _folder(tmp_path_factory, "cover")
    rnd, filler = random.Random(7), FILLER
    for i in range(60):
        words = [rnd.choice(filler) for _ in range(120)]
        held = ["alpha", "beta", "gamma"] if i % 6 == 0 else [rnd.choice(["alpha", "beta", "gamma"])]
        for w in held:
            for _ in range(1 if len(held) > 1 else rnd.randint(5, 25)):
                words.insert(rnd.randrange(len(words)), w)
        (root / f"n{i:02d}.md").write_text(" ".join(words) + "\n")
    v = _indexed(root)
    yield v
    v.close()


@pytest.mark.parametrize("q", ["alpha beta gamma", "alpha beta", "gamma alpha", "beta gamma notes"])
def test_the_top_hits_are_those_every_candidate_s_share_of_the_words_gives(coverage_vault, q):
    # asked for 50, every candidate's share of the words is worked out; asked for fewer, only
    # those of the candidates that can still reach the top: the same notes, in the same order
    every = coverage_vault.search(q, 50, explain=True)["hits"]
    assert all(h["explain"]["coverage"] is not None for h in every)
    for n in (1, 3, 5):
        few = coverage_vault.search(q, n, explain=True)["hits"]
        assert [(h["path"], h["score"]) for h in few] == [(h["path"], h["score"]) for h in every[:n]]
    if q == "alpha beta gamma":  # the notes holding all three, each once, first
        assert {h["path"] for h in every[:10]} == {f"n{i:02d}.md" for i in range(0, 60, 6)}


def test_korean_function_words_weigh_little_beside_the_words_of_the_question(tmp_path_factory):
    """`백업은 어떻게 해요` (how do I back up): the note about backups answers it, not the one
    that asks `어떻게` (how) in its heading and every line, as English stop words weigh
    little in `how do I ...`; a query of function words alone still ranks by them."""
    root = _folder(tmp_path_factory, "ko-stop")
    (root / "질문 모음.md").write_text("# 어떻게 하나요\n\n" + "이건 어떻게 하죠? 저건 어떻게 해요? " * 6 + "\n")
    (root / "기록.md").write_text("# 기록\n\n매일 백업합니다. 백업 파일은 외장 디스크에 둡니다.\n")
    for i in range(8):
        (root / f"일기 {i}.md").write_text(f"# {i}일\n\n오늘은 산책을 했다.\n")
    v = _indexed(root)
    try:
        assert _paths(v, "백업은 어떻게 해요", 2)[0] == "기록.md", _paths(v, "백업은 어떻게 해요", 2)
        assert _paths(v, "어떻게", 1) == ["질문 모음.md"]
    finally:
        v.close()


def test_a_content_word_of_the_korean_stop_list_keeps_its_weight(tmp_path_factory):
    """The list's nouns are searched for (양자 quantum, 시간 time): `양자 암호` (quantum
    cryptography) ranks the note on it above one that says 암호 (password) twice."""
    root = _folder(tmp_path_factory, "ko-content")
    (root / "보안세미나.md").write_text("# 보안 세미나\n\n오늘 발표는 양자 암호 통신 실험이었다.\n")
    (root / "비밀번호.md").write_text("# 계정 정리\n\n암호 변경 주기를 정하고 암호 관리자를 쓴다.\n")
    (root / "생산성.md").write_text("# 생산성\n\n하루 시간 관리 요령.\n")
    (root / "창고.md").write_text("# 창고\n\n재고 관리 대장 작성.\n")
    (root / "양자컴퓨터.md").write_text("# 양자 컴퓨터 입문\n\n큐비트와 중첩, 양자 게이트의 기초.\n")
    (root / "큐비트.md").write_text("# 큐비트 정리\n\n큐비트는 양자 컴퓨터의 기본 단위다.\n")
    (root / "시간여행.md").write_text("# 시간 여행 소설 목록\n\n타임머신이 나오는 이야기들.\n")
    (root / "타임머신.md").write_text("# 타임머신 영화\n\n시간 여행을 다룬 영화 목록.\n")
    for i in range(6):
        (root / f"일기 {i}.md").write_text(f"# {i}일\n\n오늘은 산책을 했다.\n")
    v = _indexed(root)
    try:
        got = _paths(v, "양자 암호")
        assert got.index("보안세미나.md") < got.index("비밀번호.md"), got
        got = _paths(v, "시간 관리")
        assert got.index("생산성.md") < got.index("창고.md"), got
    finally:
        v.close()


def test_a_symbol_outranks_notes_that_repeat_its_parts(tmp_path_factory):
    """One note says `denote-link-description` once; six say `denote link description`, the
    same words in the same order, over and over: the symbol's note comes first (the index
    keeps the symbol whole, not only as the phrase of its parts), and the six still match."""
    root = _folder(tmp_path_factory, "sym-vs-parts")
    (root / "formatting.md").write_text("# Formatting\n\nCall denote-link-description to format it.\n")
    for i in range(6):
        (root / f"parts{i}.md").write_text(
            f"# Denote link description {i}\n\n"
            + "The denote link description is what a denote link shows; denote link description again. " * (2 + i)
            + "\n")
    v = _indexed(root)
    try:
        got = _paths(v, "denote-link-description")
        assert got[0] == "formatting.md", got
        assert len(got) == 7, "the parts still match"
    finally:
        v.close()


@pytest.mark.parametrize("q,first", [("std::vec::Vec", "rust.md"), ("os.path.join", "python.md")])
def test_a_symbol_with_dots_or_colons_outranks_its_parts(tmp_path_factory, q, first):
    root = _folder(tmp_path_factory, "sym-dots")
    (root / "rust.md").write_text("Make one with std::vec::Vec and push.\n")
    (root / "python.md").write_text("Join them with os.path.join, then open.\n")
    for i in range(4):
        (root / f"prose{i}.md").write_text("The std vec Vec type; a vec in std. The os path join of a path, "
                                           "join the os path. " * (2 + i) + "\n")
    v = _indexed(root)
    try:
        got = _paths(v, q)
        assert got[0] == first, got
    finally:
        v.close()


@pytest.fixture(scope="module")
def jekyll(tmp_path_factory):
    """A Jekyll wiki: `bell-labs.md` tags itself with the singular `tag :` key (a space before
    the colon, tags split on spaces) and never says `Bell Labs` in its text; other notes
    mention Bell Labs, some of them often."""
    root = _folder(tmp_path_factory, "jekyll")
    (root / "bell-labs.md").write_text("---\nlayout: wiki\ntitle: Murray Hill\ntag : unix bell-labs\n---\n\n"
                                       "The research lab where the transistor, Unix and C were made.\n")
    (root / "unix-history.md").write_text("---\ntitle: Unix history\n---\n\nKen Thompson wrote Unix at Bell Labs. "
                                          "Bell Labs gave it to universities.\n")
    (root / "c-language.md").write_text("Dennis Ritchie made C at Bell Labs, for Unix.\n")
    (root / "transistor.md").write_text("The transistor came from Bell Labs in 1947. Bell Labs, Bell Labs.\n")
    (root / "plan9.md").write_text("---\ntags: [os]\n---\nPlan 9 from Bell Labs: the next system of Bell Labs.\n")
    for i in range(6):
        (root / f"journal{i}.md").write_text(f"Day {i}. Read about the lab, and about labs of other kinds.\n")
    v = _indexed(root)
    yield v
    v.close()


def test_a_jekyll_tag_key_is_a_tag(jekyll):
    assert _paths(jekyll, "tag:unix") == ["bell-labs.md"]
    assert _paths(jekyll, "tag:bell-labs") == ["bell-labs.md"]


def test_a_query_that_is_a_note_s_tag_or_file_name_ranks_it_above_mere_mentions(jekyll):
    got = _paths(jekyll, "bell-labs")
    assert got[0] == "bell-labs.md", got
    assert {"unix-history.md", "c-language.md", "transistor.md", "plan9.md"} <= set(got), "mentions still match"


def test_a_query_that_is_a_note_s_file_name_ranks_it_above_notes_that_say_it_often(tmp_path_factory):
    """`kubernetes.md`, titled otherwise, says `kubernetes` once; other notes say it often."""
    root = _folder(tmp_path_factory, "slug-equal")
    (root / "kubernetes.md").write_text("---\ntitle: K8s 메모\n---\n\nkubernetes 클러스터를 처음 만들 때 적어 둔 것.\n")
    for i in range(5):
        (root / f"log{i}.md").write_text(f"Day {i}. Upgraded the kubernetes cluster; kubernetes nodes restarted. "
                                         * (1 + i) + "\n")
    v = _indexed(root)
    try:
        got = _paths(v, "kubernetes")
        assert got[0] == "kubernetes.md", got
        assert len(got) == 6
    finally:
        v.close()
