"""Search as a user types it: operators, flags, Korean, typos, ranking blend."""

import os
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vaultd.config import Config
from vaultd.store.index import _HOLDER, CJK_RUN, fields, split_cjk, split_cjk_lines
from vaultd.parse import decode, parse_file, parse_lines
from vaultd.query import ranking
from vaultd.store import index
from vaultd.query.ranking import parse
from vaultd.vault import Vault

NOTES = {
    "notes/rust-tips.md": "---\ntitle: Rust tips\ntags: [rust, programming]\ndate: 2025-03-01\n---\n\n# Borrow checker\n\nThe borrow checker keeps memory safe.\nLifetimes explained simply.\n",
    "notes/python-tips.md": "---\ntitle: Python tips\ntags: [python, programming]\ndate: 2024-06-01\n---\n\n# Memory\n\nPython memory is garbage collected.\nThe checker is mypy.\n",
    "journal/2025-01-10.md": "# Journal\n\nRead about the borrow checker again. #rust\n",
    "archive/old-rust.md": "# Old rust notes\n\nborrow checker borrow checker borrow checker memory\n",
    "notes/20250101T000000--가치관-정리__철학.md": "# 가치관\n\n나의 가치관은 단순함이다.\n\n## 선택\n\n가치 있는 선택을 한다.\n",
    "notes/spacing.md": "# 띄어쓰기\n\n형태소 분석기 없이도 계층 구조를 찾는다.\n",
    "notes/sync.md": "# Syncthing\n\nSyncthing keeps folders in sync. jujutsu is a VCS.\n",
    "notes/nested.md": "# Nested\n\nA zebra note. #animals/stripes\n",
}


@pytest.fixture(scope="module")
def v(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    vault = root / "vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    old = time.time() - 3 * 365 * 86400
    os.utime(vault / "archive/old-rust.md", (old, old))
    os.utime(vault / "journal/2025-01-10.md", (old, old))
    vlt = Vault(Config(vault=str(vault), state_dir=str(root / "state")).load())
    vlt.reconcile()
    yield vlt
    vlt.close()


def paths(v, q, limit=10):
    return [h["path"] for h in v.search(q, limit)["hits"]]


def test_plain_words_rank_notes_with_more_of_them_first(v):
    assert paths(v, "borrow checker lifetimes")[0] == "notes/rust-tips.md"


def test_phrase(v):
    assert "notes/python-tips.md" not in paths(v, '"borrow checker"')
    assert "notes/python-tips.md" in paths(v, "checker")


@pytest.mark.parametrize("filters", [True, False])
def test_phrase_scored_or_filtering(tmp_path, monkeypatch, filters):
    """Scored, or (where positions would be too many to read: here, always) a filter with
    the words ranking. Either way: notes with the words in that order, and no others."""
    if filters:
        monkeypatch.setattr(ranking, "PHRASE_SCAN", 0)
    notes = {"a.md": "The red fox jumps over the wall.\n", "b.md": "# Red fox\n\nIt hides by day.\n",
             "c.md": "Red apples, and a fox in the orchard.\n", "d.md": "A fox in the red evening light.\n",
             "e.md": "A note about the weather.\n"}
    for rel, text in notes.items():
        (tmp_path / "vault").mkdir(exist_ok=True)
        (tmp_path / "vault" / rel).write_text(text)
    vlt = Vault(Config(vault=str(tmp_path / "vault"), state_dir=str(tmp_path / "state")).load())
    try:
        vlt.reconcile()
        res = vlt.search('"red fox"')
        assert [h["path"] for h in res["hits"]][0] == "b.md"  # in a title and heading
        assert {h["path"] for h in res["hits"]} == {"a.md", "b.md"} and res["total"] == 2
        assert {h["path"] for h in vlt.search('red -"red fox"')["hits"]} == {"c.md", "d.md"}
        assert {h["path"] for h in vlt.search('"fox red"')["hits"]} == set()
    finally:
        vlt.close()


@pytest.mark.parametrize("filters", [True, False])
def test_a_phrase_with_a_word_twice_is_the_phrase_typed(tmp_path, monkeypatch, filters):
    if filters:
        monkeypatch.setattr(ranking, "PHRASE_SCAN", 0)
    notes = {"a.md": "We keep a one to many map.\n", "b.md": "The mapping is one to one.\n",
             "c.md": "I saw the cat and the dog.\n", "d.md": "So, red fox is tired.\n", "e.md": "A red red fox.\n"}
    (tmp_path / "vault").mkdir()
    for rel, text in notes.items():
        (tmp_path / "vault" / rel).write_text(text)
    vlt = Vault(Config(vault=str(tmp_path / "vault"), state_dir=str(tmp_path / "state")).load())
    try:
        vlt.reconcile()
        for q, want in (('"one to one"', {"b.md"}), ('"the cat and the dog"', {"c.md"}), ('"red red fox"', {"e.md"})):
            assert {h["path"] for h in vlt.search(q)["hits"]} == want, q
    finally:
        vlt.close()


def test_a_phrase_checked_in_the_best_notes_only_ranks_as_one_checked_in_all(tmp_path, monkeypatch):
    """A phrase whose words most notes hold is found by its words and checked in the best
    CHECKED notes only: the same hits as when checked in every note, the total estimated
    when not every note was checked; and checked in all when too few of the best hold it."""
    monkeypatch.setattr(ranking, "PHRASE_SCAN", 0)
    root = tmp_path / "vault"
    root.mkdir()
    for i in range(25):  # the phrases, each word once or twice
        (root / f"p{i:02d}.md").write_text(f"Note {i}: a blue owl and a red fox. " + "blue owl " * (i % 3) + "\n")
    for i in range(15):  # the words apart, many times over
        (root / f"w{i:02d}.md").write_text("red wine, fox tail, red sky, fox den. " * (3 + i % 4) + "owl, then blue.\n")
    cfg = Config(vault=str(root), state_dir=str(tmp_path / "state")).load()
    cfg.search.candidates = 5
    vlt = Vault(cfg)
    try:
        vlt.reconcile()
        every = {q: vlt.search(q, 5) for q in ('"blue owl"', '"red fox"')}  # CHECKED (200) is every note here
        assert all(not r["total_estimated"] and r["total"] == 25 for r in every.values())
        monkeypatch.setattr(index, "CHECKED", 10)
        owl = vlt.search('"blue owl"', 5)  # the best 10 by the words hold it: 5 of them are the hits
        assert [h["path"] for h in owl["hits"]] == [h["path"] for h in every['"blue owl"']["hits"]]
        assert owl["total_estimated"] and owl["total"] == 40  # 40 notes hold the words; all 10 checked hold it
        fox = vlt.search('"red fox"', 5)  # the best 10 by the words lack it: checked in every note
        assert [h["path"] for h in fox["hits"]] == [h["path"] for h in every['"red fox"']["hits"]]
        assert not fox["total_estimated"] and fox["total"] == 25
        assert all(h["path"].startswith("p") for h in fox["hits"])
        # two phrases, one with a word, one without a phrase: the same notes as checked in every note
        for q in ('"blue owl" "red fox"', '"blue owl" -"red fox"', '"blue owl" +tail', '"red fox" note'):
            monkeypatch.setattr(index, "CHECKED", 200)
            want = vlt.search(q, 5)
            monkeypatch.setattr(index, "CHECKED", 10)
            got = vlt.search(q, 5)
            assert [h["path"] for h in got["hits"]] == [h["path"] for h in want["hits"]], q
            assert not want["total_estimated"] and (got["total_estimated"] or got["total"] == want["total"]), q
        assert vlt.search('"blue owl" -"red fox"', 5)["hits"] == [] and vlt.search('"owl red"', 5)["hits"] == []
    finally:
        vlt.close()


def test_a_phrase_is_checked_in_the_best_notes_a_batch_at_a_time_until_enough_hold_it(tmp_path, monkeypatch):
    """The best by the words are checked first, a quarter more than wanted; where too few of
    them hold the phrase (notes that say its words apart, many times, outrank it), the rest
    of the best: the same hits as when every note is checked, with no need to check them all."""
    monkeypatch.setattr(ranking, "PHRASE_SCAN", 0)
    root = tmp_path / "vault"
    root.mkdir()
    for i in range(12):
        (root / f"p{i:02d}.md").write_text(f"Note {i} saw a blue owl at dusk.\n")
    for i in range(4):  # the words apart, often: they score above every note with the phrase
        (root / f"w{i}.md").write_text("blue and owl. " * (8 + i) + "\n")
    cfg = Config(vault=str(root), state_dir=str(tmp_path / "state")).load()
    cfg.search.candidates = 5
    vlt = Vault(cfg)
    try:
        vlt.reconcile()
        every = vlt.search('"blue owl"', 5)
        assert not every["total_estimated"] and every["total"] == 12
        words = vlt.search("blue owl", 10)["hits"]
        assert [h["path"][0] for h in words[:4]] == ["w"] * 4  # the first 6 checked hold 2 phrases
        monkeypatch.setattr(index, "CHECKED", 14)  # fewer than the 16 notes holding the words
        got = vlt.search('"blue owl"', 5)
        assert [h["path"] for h in got["hits"]] == [h["path"] for h in every["hits"]]
        assert all(h["path"].startswith("p") for h in got["hits"])
        # found among the best 14, not by checking every note: the total is estimated from them
        assert got["total_estimated"] and got["total"] == round(16 * 10 / 14)
    finally:
        vlt.close()


def test_exclusion_and_required(v):
    assert "notes/rust-tips.md" not in paths(v, "checker -lifetimes")
    assert "notes/rust-tips.md" in paths(v, "checker")
    assert paths(v, 'memory -"borrow checker"') == ["notes/python-tips.md"]
    assert set(paths(v, "checker +mypy")) == {"notes/python-tips.md"}


def test_or_is_accepted(v):
    assert set(paths(v, "mypy OR lifetimes")) == {"notes/python-tips.md", "notes/rust-tips.md"}


def test_tag_title_path_filters(v):
    assert set(paths(v, "checker tag:rust")) == {"notes/rust-tips.md", "journal/2025-01-10.md"}
    assert paths(v, "tag:python") == ["notes/python-tips.md"]
    assert paths(v, "title:python checker") == ["notes/python-tips.md"]
    assert set(paths(v, "checker path:notes")) == {"notes/rust-tips.md", "notes/python-tips.md"}
    assert paths(v, "borrow path:journal") == ["journal/2025-01-10.md"]
    assert paths(v, "borrow path:journal/2025") == ["journal/2025-01-10.md"], "a file name's start"
    assert paths(v, "borrow path:journal/2024") == [] and paths(v, "checker path:note") == []
    assert set(paths(v, "path:notes/r")) == {"notes/rust-tips.md"}
    assert paths(v, "borrow path:jour*nal(x)[y]") == [], "regex characters are literal"


def test_date_filters_use_the_note_date(v):
    assert paths(v, "tips after:2025-01-01") == ["notes/rust-tips.md"]
    assert paths(v, "tips before:2025") == ["notes/python-tips.md"]
    assert paths(v, "tips after:2024-06 before:2024-07") == ["notes/python-tips.md"]


def test_a_date_that_is_no_date_is_an_error_not_no_filter(v):
    from vaultd.errors import QueryError

    for q in ("tips before:2025-13", "tips after:2025-02-30", "tips after:9999-99-99"):
        with pytest.raises(QueryError, match="is not a date"):
            v.search(q)
    with pytest.raises(QueryError, match="before: '2025-13' is not a date"):
        v.grep("tips", before="2025-13")
    with pytest.raises(QueryError, match="after: 'soon' is not a date"):
        v.grep("tips", after="soon")


def test_a_tag_finds_the_tags_nested_under_it(v):
    assert paths(v, "zebra tag:animals") == ["notes/nested.md"]  # #animals/stripes, as Obsidian's tag search
    assert paths(v, "zebra tag:animals/stripes") == ["notes/nested.md"]
    assert paths(v, "zebra tag:anim") == [] and paths(v, "zebra tag:stripes") == []
    assert [m["path"] for m in v.grep("zebra", tags=["animals"])["matches"]] == ["notes/nested.md"]
    assert v.grep("zebra", tags=["anim"])["matches"] == []


def test_a_tag_s_nested_tags_are_found_whatever_their_letters_and_however_many(tmp_path):
    """tag:X finds X and X/anything below, literally (no character of X is a pattern), and
    every one of a parent's many children (a prefix expanded without a limit)."""
    files = {f"kids/k{i}.md": f"---\ntags: [many/child{i:02d}]\n---\nkid\n" for i in range(70)}
    files |= {
        "a.md": "---\ntags: [a]\n---\nx\n", "abc.md": "---\ntags: [a/b/c]\n---\nx\n",
        "ab.md": "---\ntags: [ab]\n---\nx\n", "ba.md": "---\ntags: [b/a]\n---\nx\n",
        "cpp.md": "---\ntags: [c++/std]\n---\nx\n", "c.md": "---\ntags: [c/std]\n---\nx\n",
        "ver.md": "---\ntags: [v1.0/beta]\n---\nx\n", "v10.md": "---\ntags: [v1x0/beta]\n---\nx\n",
        "ko.md": "---\ntags: [가치/철학]\n---\nx\n",
    }
    v = _vault(tmp_path, files)
    try:
        def found(q):
            return sorted(h["path"] for h in v.search(q, 100)["hits"])

        assert found("tag:a") == ["a.md", "abc.md"]
        assert found("tag:a/b") == ["abc.md"]
        assert found("tag:c++") == ["cpp.md"] and found("tag:v1.0") == ["ver.md"]
        assert found("tag:가치") == ["ko.md"]
        assert found("tag:many") == sorted(f"kids/k{i}.md" for i in range(70))
        assert v.search("tag:many", 5)["total"] == 70
    finally:
        v.close()


def test_bad_operator_values_are_plain_words(v):
    p = parse("after:someday tips")
    assert p.given("after") == [] and "after:someday" in p.words
    assert v.search("after:someday")["hits"] == []


def test_typo_tolerance_for_unknown_words(v):
    assert paths(v, "borow chekcer")[0] in ("notes/rust-tips.md", "journal/2025-01-10.md")
    assert paths(v, "sycnthing")[0] == "notes/sync.md"


def test_last_word_is_a_prefix(v):
    assert paths(v, "lifeti")[0] == "notes/rust-tips.md"
    assert parse("lifeti").prefix == "lifeti" and parse("lifeti ").prefix is None, "a trailing space ends the word"
    assert paths(v, "borrow chec")[0] == "notes/rust-tips.md"


def test_korean_particles_and_spacing(v):
    assert paths(v, "가치관이")[0] == "notes/20250101T000000--가치관-정리__철학.md"
    assert paths(v, "가치관은 뭐지")[0] == "notes/20250101T000000--가치관-정리__철학.md"
    assert paths(v, "형태소분석기")[0] == "notes/spacing.md"
    assert paths(v, "계층구조")[0] == "notes/spacing.md"
    assert paths(v, "jujutsu가")[0] == "notes/sync.md"
    assert paths(v, "syncthing에서")[0] == "notes/sync.md"


def test_korean_snippet_lines_and_highlights(v):
    hit = v.search("가치관이")["hits"][0]
    s = {sn["line"]: sn for sn in hit["snippets"]}
    assert s[3]["text"] == "나의 가치관은 단순함이다." and s[3]["highlights"] == [[3, 6]]
    assert s[3]["heading"] == "가치관"


def test_cold_is_searched_when_asked_or_when_warm_finds_too_little(v):
    assert "archive/old-rust.md" not in paths(v, "borrow checker"), "three WARM hits: COLD stays out"
    res = v.search("borrow checker", 10, scope="all")
    ranked = [h["path"] for h in res["hits"]]
    assert res["cold"] and ranked.index("archive/old-rust.md") > ranked.index("notes/rust-tips.md"), "ranked down"
    res = v.search("lifetimes old")
    assert res["cold"] and "archive/old-rust.md" in [h["path"] for h in res["hits"]], "WARM gave 1 hit: widened"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(list('ab가치 "-+:()*~^\\/#') + ["tag:", "title:", "path:", "after:", "before:",
                                                               "2025-01", "OR ", "\x00", "🙂", "borrow", "checker"]),
                max_size=30), st.text(max_size=20))
@example(parts=["after:", "-"], noise="")  # no date's shape: words, not an error
def test_no_query_raises(v, parts, noise):
    res = v.search("".join(parts) + noise, 5)
    assert isinstance(res["hits"], list)


_words = st.sampled_from(["index", "Index", "indexes", "reindex", "가치관", "가치관은", "café", "“index”", "x_index",
                          "ÉTÉ", "한index", "\ufeff", "\x00", "---", "\n", " ", "  ", "memory", "MEMORY."])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_words, max_size=60).map("".join), query=st.lists(_words, min_size=1, max_size=3))
@example(text="index\n\x00", query=["index", "\x00"])  # NUL: decoding turns it into a space
def test_snippets_from_bytes_equal_snippets_from_text(text, query):
    """The bytes fast path finds the same lines, spans and columns as the decoded text."""
    from vaultd.parse import decode
    from vaultd.query.snippets import Matcher, best_lines

    words = [w.strip().lower() for w in query if w.strip()]
    m = Matcher(words, words)
    data = text.encode()
    assert best_lines(data, m, skip=1) == best_lines(decode(data)[0], m, skip=1)


@settings(max_examples=40, deadline=None)
@given(early=st.lists(st.sampled_from(["memory index", "memory", "index", "가치관 memory", "ordinary"]), max_size=8),
       late=st.lists(st.sampled_from(["memory index rare", "rare", "memory", "가치관이 rare"]), max_size=8),
       query=st.sampled_from([["memory"], ["memory", "index"], ["rare", "memory"], ["가치관"], ["memory", "rare", "index"]]),
       crlf=st.booleans())
def test_big_files_searched_head_first_give_the_same_snippets(early, late, query, crlf):
    """Past 64 KB the bytes path looks in the head first (and reads the rest of the file
    only if it must): the lines it picks are the ones a search of the whole text picks."""
    from vaultd.parse import decode
    from vaultd.query.snippets import HEADS, READ_FIRST, Matcher, best_lines

    filler = "plain filler words without the terms\n" * 2000  # ~74 KB: the late part lies past the head
    late_part = "\n".join(late) + "\n"
    text = "---\ntitle: memory index rare\n---\n" + "\n".join(early) + "\n" + filler + \
        (late_part.replace("\n", "\r\n") if crlf else late_part) + filler
    m = Matcher(query, query)
    data = text.encode()
    assert len(data) > HEADS[-1] > READ_FIRST
    want = best_lines(decode(data)[0], m, skip=3)
    assert best_lines(data, m, skip=3) == want
    read = []
    assert best_lines(data[:READ_FIRST], m, skip=3, rest=lambda: read.append(1) or data[READ_FIRST:]) == want
    assert len(read) <= 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["가치관", "이", "漢字", "カナ", "ㄱ", "ᄀ", "a", "é", " ", "\n", "—", "·"]), max_size=30).map("".join))
def test_stemmed_fields_get_text_without_hangul_han_kana_and_bigram_fields_the_runs(text):
    # split_cjk splits once for both (faster); this is what it must equal
    assert split_cjk(text) == (CJK_RUN.sub(_HOLDER, text), " ".join(CJK_RUN.findall(text)))
    # and the worker's way, from the lines (no run crosses a line end)
    assert split_cjk_lines(text.split("\n")) == split_cjk(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["---\n", "title: 가\n", "tags: [a]\n", "# 머리 h\n", "* H 가치관\n", "[[x|가 나]] ", "a",
                                 "가치관이 ", "\n", "\r\n", "\ufeff", "\x00", "é", "---"]), max_size=25).map("".join),
       st.sampled_from(["n.md", "n.org", "20240101T000000--가-b__t.md"]))
@example("---\ntitle: 가\n---", "n.md")  # front matter to the last byte
def test_workers_index_documents_equal_the_daemons_own(text, name):
    # workers make documents from parse_lines (a body of lines never joined); the daemon's
    # own (small batches) from parse_file: the index must not know which it got
    data = text.encode()
    assert fields(*parse_lines(name, data)) == fields(parse_file(name, data))
    # one body line per file line, front matter blanked: what a hit's line number is read from
    assert parse_file(name, data).body.count("\n") == decode(data)[0].count("\n")


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(["memory", "Index", "indexes", "rare", "reindex", "plain", "x_index", "memories"]),
                               max_size=4).map(" ".join), max_size=40),
       query=st.lists(st.sampled_from(["memory", "index", "rare", "indexes", "memories"]), min_size=1, max_size=3, unique=True))
@example(lines=["memories"] * 3 + ["memory memory memory", "memory", "memory"], query=["memory", "memories"])
def test_snippets_are_the_lines_with_most_terms_then_most_matches(lines, query):
    """The search for lines stops early (rarest term first; once the terms not yet read
    cannot change the outcome): what it picks is what looking at every line picks."""
    import re

    from vaultd.query.ranking import stem
    from vaultd.query.snippets import Matcher, best_lines

    def score(line):
        low = line.lower()
        there = [w for w in query if re.search(rf"(?<!\w){w}", low)]
        return len({stem(w) for w in there}), sum(low.count(w) for w in there)

    scored = [(*score(line), i + 1) for i, line in enumerate(lines)]
    every = len({stem(w) for w in query})
    if sum(s[0] == every for s in scored) >= 9:  # past 3n lines with every term the search stops on purpose
        return
    want = sorted(i for _, _, i in sorted((s for s in scored if s[0]), key=lambda s: (-s[0], -s[1], s[2]))[:3])
    got = [sn.line for sn in best_lines("\n".join(lines).encode(), Matcher(query, query))]
    assert got == want


_fm_lines = st.sampled_from(["---", "--- ", "...", "title: x", "", "a" * 700, "---" + " " * 2100, "가" * 300, "\r", "-"])


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_fm_lines, max_size=40), tail=st.sampled_from(["", "b\n" * 300, "c" * 20000]))
@example(lines=["---", "a" * 700, "a" * 700, "a" * 638, "-----"], tail="c" * 20000)  # 2 KB ends in "---"
def test_front_matter_found_from_2kb_as_from_16kb(lines, tail):
    """Snippets skip front matter counted from a file's first 2 KB when it ends there: the
    count is the one its first 16 KB give."""
    from vaultd.parse import decode
    from vaultd.parse.markdown import split_front_matter
    from vaultd.query.search import _front_matter_lines

    data = ("\n".join(lines) + "\n" + tail).encode()
    assert _front_matter_lines(data) == split_front_matter(decode(data[:16384])[0].split("\n", 200))


def _vault(tmp_path, files: dict[str, str]) -> Vault:
    for rel, text in files.items():
        (tmp_path / "vault" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "vault" / rel).write_text(text)
    v = Vault(Config(vault=str(tmp_path / "vault"), state_dir=str(tmp_path / "state")).load())
    v.reconcile()
    return v


def test_a_title_that_is_the_query_comes_first(tmp_path):
    """`properties` finds Properties before Properties view, whose text says properties
    more often (probe, on Obsidian's help); an alias counts as a title."""
    v = _vault(tmp_path, {
        "Properties.md": "Properties hold data about a note.\n",
        "Plugins/Properties view.md": "# Properties view\nThe properties view lists the properties of the vault: "
                                      "properties, properties and more properties.\n",
        "Bases.md": "---\naliases: [data bases]\n---\nA base is a view of notes. Data and bases.\n",
        "Data.md": "# Data bases\nData bases, data bases everywhere: data bases of data bases.\n"})
    try:
        assert paths(v, "properties")[:2] == ["Properties.md", "Plugins/Properties view.md"]
        assert paths(v, "Data-Bases")[0] == "Bases.md"
    finally:
        v.close()


def test_a_typo_found_in_a_note_or_two_is_searched_as_its_correction_too(tmp_path):
    """`zettlekasten`, misspelt once in the vault, found only that note (probe, braindump):
    a long word in a note or two, whose correction is in ten times as many, is searched as
    both; a short rare word stays itself."""
    files = {f"Zettelkasten {i}.md": f"The zettelkasten method, note {i}.\n" for i in range(10)}
    files |= {"typo.md": "I read about the zettlekasten once.\n", "bake.md": "We bake bread.\n",
              "make.md": "# Make\nmake make make\n", **{f"m{i}.md": f"make {i}\n" for i in range(10)}}
    v = _vault(tmp_path, files)
    try:
        found = paths(v, "zettlekasten", 20)
        assert "typo.md" in found and len(found) == 11 and {"Zettelkasten 0.md", "Zettelkasten 1.md"} <= set(found)
        assert paths(v, "bake") == ["bake.md"]
    finally:
        v.close()


def test_a_last_word_the_notes_hold_is_taken_as_typed(tmp_path):
    """Search-as-you-type expands a word still being typed, not one the notes hold whole:
    `graph` is not `graphql` (expanding a common word read every term it starts)."""
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "graph.md").write_text("# Graph\n\nThe link graph of the vault.\n")
    (tmp_path / "v" / "api.md").write_text("# API\n\nA graphql endpoint.\n")
    vlt = Vault(Config(vault=str(tmp_path / "v"), state_dir=str(tmp_path / "st")).load())
    try:
        vlt.reconcile()
        assert paths(vlt, "graph") == ["graph.md"]
        assert "api.md" in paths(vlt, "graphq"), "a word being typed still finds what it starts"
    finally:
        vlt.close()


def test_a_quoted_phrase_is_shown_where_it_stands(tmp_path):
    """The snippets of a phrase search are the lines holding it word for word, before lines
    holding its words apart (the denote-manual's changelog showed two other versions first)."""
    (tmp_path / "v").mkdir()
    lines = ["# Changelog", "", "Version 3.0.1 fixed 1 bug in 3 places.", "", "Version 1.3.0 came later.", "",
             *[f"filler line {i}" for i in range(20)], "", "## Version 3.1.0", "", "Version 3.1.0 added links."]
    (tmp_path / "v" / "log.md").write_text("\n".join(lines) + "\n")
    vlt = Vault(Config(vault=str(tmp_path / "v"), state_dir=str(tmp_path / "st")).load())
    try:
        vlt.reconcile()
        [hit] = vlt.search('"Version 3.1.0"')["hits"]
        got = [s["line"] for s in hit["snippets"]]
        want = [lines.index("## Version 3.1.0") + 1, lines.index("Version 3.1.0 added links.") + 1]
        assert set(want) <= set(got), got
    finally:
        vlt.close()
