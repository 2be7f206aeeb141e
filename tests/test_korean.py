"""Korean queries as people type them: Hangul typos corrected by their letters (jamo) into
the vault's own words; words found by their stems and nouns (Kiwi, the korean extra, which
`make test` installs), whatever ending or particle the notes give them. A real vault and a
real index."""

import os

import pytest

from vaultd.config import Config
from vaultd.query import korean
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


def test_a_search_waits_for_the_first_vocabulary_but_never_for_a_rebuild(patterns):
    """A search that needs the typo vocabulary while another thread (the daemon's warm-up)
    builds the first one waits for it: the same answers from the first second. While a
    rebuild runs (the notes changed), it corrects with the vocabulary it has, at once."""
    import threading

    from conftest import wait_for

    searcher = patterns.searcher
    searcher._vocab = (lambda: None, None, 0.0)  # as at a start (no table held)
    got = []
    asker = threading.Thread(target=lambda: got.append(searcher.vocabulary().correct_hangul("옵져버")))
    with searcher._vocab_lock:  # the first being built by another thread
        asker.start()
        asker.join(0.2)
        assert asker.is_alive() and not got, "it waits for the first vocabulary"
    wait_for(lambda: got)
    assert got == ["옵저버"]
    built = searcher._vocab[1]
    searcher._vocab = (lambda: None, built, 0.0)  # built of other notes, long ago: due for a rebuild
    with searcher._vocab_lock:  # a rebuild under way
        assert searcher.vocabulary() is built, "the vocabulary it has, at once"


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


def test_a_vocabulary_built_in_the_background_gives_way_and_equals_one_built_at_once(monkeypatch):
    """The warm-up builds the vocabulary giving way to searches between batches (`pause`):
    the same words, Hangul ones too, as built in one go."""
    from vaultd.query import ranking

    monkeypatch.setattr(ranking, "VOCABULARY_BATCH", 3)
    titles = [f"옵저버 패턴 {i}" for i in range(10)] + ["Graph view", "templates", "전략 패턴"]
    headings = [f"패턱 {i}" for i in range(7)]
    pauses = []
    at_once, giving_way = Vocabulary(titles, headings), Vocabulary(iter(titles), iter(headings), lambda: pauses.append(1))
    assert len(pauses) >= 5, "it gave way between batches"
    assert giving_way.count == at_once.count and giving_way._by_delete == at_once._by_delete
    assert giving_way.hangul_words() == at_once.hangul_words() and len(pauses) >= 8
    assert giving_way.correct_hangul("옵져버") == "옵저버" and giving_way.correct("graph veiw".split()[1]) == "view"


@pytest.fixture(scope="module")
def habits(tmp_path_factory, kiwi):
    """A note that puts things off (`미루는`, `미루기`), and one on the greatest common divisor
    whose title and body hold `최대` (of `최대공약수`) and `대한` (of `~에 대한`): the bigrams of
    `최대한` (as much as possible); and notes about other things `~에 대한`."""
    root = tmp_path_factory.mktemp("ko-stems") / "vault"
    root.mkdir()
    (root / "습관.md").write_text("# 할 일 습관\n\n일을 미루는 버릇이 있다. 미루기를 멈추려면 작게 시작한다.\n")
    (root / "최대공약수.md").write_text("# 최대공약수\n\n최대공약수를 구하는 방법: 최대공약수는 유클리드 호제법으로 "
                                       "구한다. 최대공약수와 최소공배수에 대한 정리.\n")
    for i in range(4):
        (root / f"메모 {i}.md").write_text(f"# 메모 {i}\n\n오늘은 날씨에 대한 이야기. 산책을 했다.\n")
    v = Vault(Config(vault=str(root), state_dir=str(root.parent / "state")).load())
    v.reconcile()
    yield v
    v.close()


def test_a_verb_finds_notes_with_its_other_endings(habits):
    """`미룬다` (puts off) shares no bigram with `미루는`, `미루기`: its stem `미루` does, as a
    word start; the line is the snippet, the stem highlighted."""
    hits = habits.search("미룬다", 5)["hits"]
    assert [h["path"] for h in hits][:1] == ["습관.md"], hits
    assert any("미루는" in s["text"] for s in hits[0]["snippets"]), hits[0]


def test_an_adverb_is_not_found_by_its_bigrams_inside_other_words(habits):
    """`최대한` (as much as possible), one word the notes never hold: its bigrams are only parts
    of `최대공약수` and `~에 대한`, and weigh as a function word's."""
    got = _paths(habits, "최대한 미룬다")
    assert got[0] == "습관.md", got
    assert _paths(habits, "최대공약수")[0] == "최대공약수.md"  # the word itself still finds its note


def test_a_query_word_is_searched_by_its_stem_or_noun():
    assert korean.forms("미룬다") == ("미루",)  # surface 미룬: the stem is Kiwi's
    assert korean.forms("최대공약수를")[0] == "최대공약수"  # less its particle, whole first
    assert korean.forms("다크모드로") == ("다크모드", "다크", "모드")  # a note may write them apart
    assert korean.forms("어떻게") == ()  # a function word
    assert korean.forms("접었다") == ()  # 접: one syllable starts too many words


@pytest.fixture(scope="module")
def loanwords(tmp_path_factory):
    """Notes writing loanwords one way (`메시지`, `디렉터리`) in their text only (no title or
    heading holds them: the typo step's vocabulary does not), and a note saying `거기`."""
    root = tmp_path_factory.mktemp("ko-loanwords") / "vault"
    root.mkdir()
    (root / "커밋 규칙.md").write_text("# 커밋 규칙\n\n커밋 메시지는 짧게 쓰고 본문에 이유를 적는다.\n")
    (root / "셸 도구.md").write_text("# 셸 도구\n\n자주 가는 디렉터리로 옮겨 주는 도구들.\n")
    (root / "여행.md").write_text("# 여행\n\n거기에 가면 바다가 보인다.\n")
    for i in range(4):
        (root / f"메모 {i}.md").write_text(f"# 메모 {i}\n\n오늘은 산책을 했다.\n")
    v = Vault(Config(vault=str(root), state_dir=str(root.parent / "state")).load())
    v.reconcile()
    yield v
    v.close()


@pytest.mark.parametrize("q, note", [("메세지", "커밋 규칙.md"), ("커밋 메세지를", "커밋 규칙.md"),
                                     ("디렉토리", "셸 도구.md")])
def test_a_loanword_finds_the_notes_that_spell_it_otherwise(loanwords, q, note):
    """`메세지` shares no bigram with `메시지` (세/시: ㅔ/ㅣ), `디렉토리` one of three with
    `디렉터리` (토/터: ㅗ/ㅓ): the vault's own spelling is searched as a word start too."""
    got = _paths(loanwords, q)
    assert got[:1] == [note], got


def test_a_short_word_is_not_searched_by_other_spellings(loanwords):
    """`고기` (meat) and `거기` (there) are different words: two syllables are never respelled."""
    assert "여행.md" not in _paths(loanwords, "고기")


def test_other_spellings():
    for typed, written in [("디렉토리", "디렉터리"), ("메세지", "메시지"), ("탬플릿", "템플릿"), ("컨텐츠", "콘텐츠"),
                           ("스케쥴", "스케줄"), ("비지니스", "비즈니스"), ("어플리케이션", "애플리케이션"),
                           ("써버들", "서버들"), ("셋팅을", "세팅을"), ("리포지토리", "레포지터리")]:
        assert written in korean.other_spellings(typed), typed
    assert korean.other_spellings("고기") == [] and korean.other_spellings("abc") == []
    assert "디렉토리" not in korean.other_spellings("디렉토리")


def test_kiwi_runs_in_a_process_of_its_own_and_ends_when_idle(monkeypatch):
    """The analyser is a child process (the daemon never holds Kiwi's memory), started by the
    first word, which does not wait for it to load (it is matched by rule meanwhile); asked
    again while it runs, and ended after its idle time."""
    from conftest import wait_for
    from vaultd.query import korean

    if korean.ANALYSER.missing:
        pytest.skip("kiwipiepy is not installed (the korean extra)")
    a = korean.Analyser()
    try:
        assert a.tokenize("미룬다") is None and a.running and not a.ready, "the first word does not wait for Kiwi"
        wait_for(lambda: a.ready)
        monkeypatch.setattr(korean, "KIWI_IDLE_S", 0.5)
        assert ("미루", "VV") in {(f, t.split("-")[0]) for f, t, _ in a.tokenize("미룬다")}
        pid = a.proc.pid
        assert pid != os.getpid() and a.running
        assert a.tokenize("비밀번호를")[0][0] == "비밀" or a.tokenize("비밀번호를")[0][0] == "비밀번호"
        assert a.proc is not None and a.proc.pid == pid, "one process answers while it is used"
        wait_for(lambda: not a.running)
        monkeypatch.setattr(korean, "KIWI_IDLE_S", 120.0)
        a.start()
        wait_for(lambda: a.ready)
        assert a.tokenize("최대공약수를") and a.running, "started again"
    finally:
        a.stop()


def test_the_analyser_is_this_installation_whatever_folder_it_starts_in(tmp_path, monkeypatch):
    """A `vaultd/` package in the folder the daemon runs in (a clone, an older copy) is not
    the one the analyser's process runs: `python -P -m`."""
    from conftest import wait_for
    from vaultd.query import korean

    if korean.ANALYSER.missing:
        pytest.skip("kiwipiepy is not installed (the korean extra)")
    other = tmp_path / "vaultd" / "query"
    other.mkdir(parents=True)
    for init in (tmp_path / "vaultd" / "__init__.py", other / "__init__.py"):
        init.write_text("")
    (other / "korean.py").write_text("print('not vaultd\'s analyser', flush=True)\n")
    monkeypatch.chdir(tmp_path)
    a = korean.Analyser()
    try:
        a.start()
        wait_for(lambda: a.ready or a.proc is None)
        assert a.ready and ("미루", "VV") in {(f, t.split("-")[0]) for f, t, _ in a.tokenize("미룬다")}
    finally:
        a.stop()


def test_a_hangul_query_while_kiwi_loads_is_answered_by_rule_and_not_kept(monkeypatch):
    """While the analyser loads, a word is stripped of its particle by rule (`가치관이` gives
    `가치관`), and that answer is not kept: once Kiwi answers, the word is its stem."""
    from conftest import wait_for
    from vaultd.query import korean

    if korean.ANALYSER.missing:
        pytest.skip("kiwipiepy is not installed (the korean extra)")
    a = korean.Analyser()
    monkeypatch.setattr(korean, "ANALYSER", a)
    monkeypatch.setattr(korean, "_KNOWN", {})
    try:
        assert korean.forms("가치관이") == ("가치관",)
        assert korean.forms("미룬다") == ("미룬다",), "by rule: no particle to strip"
        wait_for(lambda: a.ready)
        assert korean.forms("미룬다") == ("미루",), "Kiwi's stem, once it has loaded"
    finally:
        a.stop()


def test_the_warm_up_starts_kiwi_where_the_notes_hold_hangul(habits, monkeypatch, tmp_path):
    """Searcher.warm (the daemon's, at its start) starts the analyser when the index holds
    a Hangul word; a vault without one never starts it."""
    from conftest import wait_for
    from vaultd.query import korean

    if korean.ANALYSER.missing:
        pytest.skip("kiwipiepy is not installed (the korean extra)")
    a = korean.Analyser()
    monkeypatch.setattr(korean, "ANALYSER", a)
    try:
        habits.warm()
        wait_for(lambda: a.ready)
    finally:
        a.stop()
    english = tmp_path / "vault"
    english.mkdir()
    (english / "habits.md").write_text("# Habits\n\nPutting things off.\n")
    v = Vault(Config(vault=str(english), state_dir=str(tmp_path / "state")).load())
    try:
        v.reconcile()
        v.warm()
        assert not a.running, "no Hangul word in the notes: Kiwi is not started"
    finally:
        v.close()
