"""Budgeted context for agents: the HOT notes' opening lines and the best-matching
sections of the top hits that earn their place, never over the budget, every item naming
the exact lines of the file it holds.

Earned: a section is given for a query only with evidence that it answers it (see
Prompt.judge and earned): it holds enough of the query's content words, each weighed by
how rare it is in the vault (when it lacks some, what says what it is about, its note's
title, its heading or its note's opening paragraph, holds some of them), or the query
names it (the top hit's title and heading hold half its weight); words that say nothing about a vault (small talk, a
request's own words, stop words) weigh nothing, and code-shaped tokens (paths, file names,
symbols) count only where a note holds them. The spend follows the evidence: one item for
the first section that earns, more only for strong evidence, each item at most half the
budget. When nothing earns a place, context is empty: the budget is a ceiling, not a quota.

Clean: what a note's own tool hides is not sent (Obsidian `%% %%` and HTML comments in
Markdown, Org comment lines and comment blocks), nor lines that hold only images or
badges. A run of such lines is one line `[… N lines elided …]`; first and last stay the
file's real lines (see visible and shown).

Costs are counted by render.cost (the token estimate is documented there and in
docs/agents.md).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import re
from collections.abc import Callable
from typing import NamedTuple

from ..parse.markdown import split_front_matter
from ..render import context_item as render
from ..render import cost, estimate_tokens  # noqa: F401  (here too: context's callers count with them)
from ..store.index import CJK_RUN
from . import stopwords_ko
from .snippets import Matcher

UNITS = ("tokens", "bytes")


def note_lines(text: str, path: str) -> tuple[list[str], int]:
    """A note's text as lines, and the line its body starts on: after the front matter (of
    Markdown), blank lines, Org keywords and drawers (the note's first real lines)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    start = split_front_matter(lines) + 1 if path.endswith(".md") else 1
    while start <= len(lines) and (not lines[start - 1].strip() or lines[start - 1].lstrip().startswith(("#+", ":"))):
        start += 1
    return lines, start


def sections(lines: list[str], headings: list, body_start: int) -> list[tuple[int, int, str | None]]:
    """The note's heading sections in order: (first, last, heading), the part above the first
    heading (from `body_start`) with heading None; each from its heading to the line before
    the next one, trailing blank lines dropped. Context ranks them; semantic recall embeds them."""
    hs = sorted((h for h in headings if h.line >= body_start), key=lambda h: h.line)
    starts = [(body_start, None)] + [(h.line, h.text) for h in hs]
    out = []
    for i, (first, title) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while last > first and not lines[last - 1].strip():
            last -= 1
        if last >= first:
            out.append((first, last, title))
    return out


def ranked_sections(lines: list[str], headings: list, matcher, body_start: int,
                    limit: int = 2) -> list[tuple[int, int, int, str | None]]:
    """The note's best `limit` sections that hold query terms, best first: (first, last,
    focus line, heading). A term counts log(1 + sections / sections holding it), so a word
    the whole note is about weighs little and the rare one that names the section weighs
    much; terms in a heading count twice. The focus is the section's line with the most
    terms: found only for the sections returned, as it reads every line (a seed-scale
    note has hundreds of sections holding a common word)."""
    text = "\n".join(lines)
    low = text.lower() if matcher.latin else text  # once, not per section; bigrams match as written
    at = [0, *itertools.accumulate(len(line) + 1 for line in lines)]  # where each line starts in `text`
    secs = [(first, last, title, matcher.terms(title) if title else set(),
             matcher.terms(text, at[first - 1], at[last] - 1, low))
            for first, last, title in sections(lines, headings, body_start)]
    df: dict[str, int] = {}
    for *_, in_head, in_text in secs:
        for t in in_head | in_text:
            df[t] = df.get(t, 0) + 1
    weight = {t: math.log(1 + len(secs) / n) for t, n in df.items()}
    scored = []
    for first, last, title, in_head, in_text in secs:
        score = sum(2 * weight[t] for t in in_head) + sum(weight[t] for t in in_text)
        if score > 0:
            scored.append((-score, first, last, title))
    return [(first, last, _focus(lines, text, low, at, first, last, matcher), title)
            for _, first, last, title in heapq.nsmallest(limit, scored)]


def _focus(lines: list[str], text: str, low: str, at: list[int], first: int, last: int, matcher) -> int:
    """The line of first..last with the most distinct query terms (the first of those; `first`
    when none has any). Only lines where a term's letters stand are weighed, found by
    searching the section's text: a section can be a whole note of thousands of lines."""
    if len(low) != len(text):  # lower-casing moved offsets: weigh every line
        return max(range(first, last + 1), key=lambda n: (matcher.spans(lines[n - 1])[1], -n))
    lines_with = {first}
    end = at[last] - 1
    for w, hay in [(w, low) for w in matcher.latin] + [(g, text) for g in matcher.grams]:
        i = hay.find(w, at[first - 1], end)
        while i >= 0:
            n = bisect.bisect_right(at, i)  # the line `i` is on
            lines_with.add(n)
            i = hay.find(w, at[n], end)  # on from the next line
    return max(lines_with, key=lambda n: (matcher.spans(lines[n - 1])[1], -n))


def whole_section(lines: list[str], headings: list, first: int, last: int) -> int:
    """Where the section starting at heading line `first` ends with its subsections included
    (the line before the next heading of the same or a higher level); `last` if none starts there."""
    hs = sorted(headings, key=lambda h: h.line)
    head = next((h for h in hs if h.line == first), None)
    if head is None:
        return last
    end = next((h.line - 1 for h in hs if h.line > first and h.level <= head.level), len(lines))
    while end > first and not lines[end - 1].strip():
        end -= 1
    return max(end, last)


def section(lines: list[str], headings: list, line: int, body_start: int) -> tuple[int, int]:
    """The innermost section holding `line`: from its heading to the line before the next
    heading; above the first heading, from the body's start. Trailing blank lines dropped."""
    hs = sorted(h.line for h in headings)
    first = max([h for h in hs if h <= line], default=body_start)
    last = min([h - 1 for h in hs if h > line], default=len(lines))
    while last > first and not lines[last - 1].strip():
        last -= 1
    return first, last


def fit(lines: list[str], first: int, last: int, focus: int, make, budget: int, unit: str) -> dict | None:
    """The item for lines first..last if it fits in `budget`; else the widest window of
    whole lines around `focus` that does, grown a line below then a line above in turn
    while each fits (a side that no longer fits never will: the cost only grows); None if
    not even that line fits. Windows are found by doubling and bisection, not a line at a
    time: each try renders the whole window, and a budget of megabytes took hours that
    way; nor is a 40 MB section rendered whole to learn that 2,000 tokens will not hold it."""
    def fits(lo: int, hi: int) -> dict | None:
        cand = make(lo, hi)
        return cand if cost(render(cand), unit) <= budget else None

    def widest(ok, n: int) -> int:  # the largest k in 0..n with ok(k), given ok(0)
        good, bad = 0, 1  # doubling first, so no try renders much more than what fits
        while bad <= n and ok(bad):
            good, bad = bad, bad * 2
        bad = min(bad, n + 1)
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return good

    best = fits(focus, focus)
    if best is None:
        return None
    # both sides in step while both fit (a side at its end stays there)
    k = widest(lambda k: fits(max(first, focus - k), min(last, focus + k)) is not None,
               max(focus - first, last - focus))
    lo, hi = max(first, focus - k), min(last, focus + k)
    if hi < last and fits(lo, hi + 1):  # the round that failed: below first, then above
        hi = hi + widest(lambda d: fits(lo, hi + d) is not None, last - hi)
    elif lo > first and fits(lo - 1, hi):
        lo = lo - widest(lambda d: fits(lo - d, hi) is not None, lo - first)
    return make(lo, hi)


# -- what the note's own tool hides -----------------------------------------------------

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_MD_OPEN = re.compile(r"`+|%%|<!--")
_ORG_COMMENT = re.compile(r"^\s*#(?:\s|$)")
_ORG_BLOCK = re.compile(r"^\s*#\+(begin|end)_(\w+)", re.IGNORECASE)
_IMG = r"[^\s\]\)|]*\.(?:png|jpe?g|gif|svg|webp|bmp|avif|ico)(?:\?[^\s\]\)]*)?"
_MD_IMAGES = re.compile(r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)|!\[[^\]]*\]\([^)]*\)|!\[\[" + _IMG + r"(?:\|[^\]]*)?\]\]"
                        r"|<img\b[^>]*>|<a\b[^>]*>\s*<img\b[^>]*>\s*</a>", re.IGNORECASE)
_ORG_IMAGES = re.compile(r"\[\[(?:file:)?" + _IMG + r"\](?:\[[^\]]*\])?\]|\[\[[^\]]+\]\[(?:file:)?" + _IMG + r"\]\]",
                         re.IGNORECASE)
ELIDED = "[… {n} line{s} elided …]"
"""The line that stands in an item for a run of hidden lines."""


def visible(lines: list[str], path: str) -> tuple[list[str], list[bool]]:
    """Each line as the note's own tool shows it, and whether it is hidden whole. Markdown:
    `%% … %%` and `<!-- … -->` cut out (over lines too; not in code fences nor `code`);
    Org: comment lines (`# …`) and `#+begin_comment` blocks (not in other blocks, where `#`
    is code). A line left blank by a cut, or holding only images or badges, is hidden; a
    line blank in the file is not."""
    org = path.endswith(".org")
    shown, hidden = [], []
    images = _ORG_IMAGES if org else _MD_IMAGES
    block: str | None = None  # Org: the block we are in; Markdown: the open fence or comment
    for line in lines:
        if org:
            text, block = _org_line(line, block)
        else:
            text, block = _md_line(line, block)
        if text is not None and text.strip() and images.search(text) and not images.sub("", text).strip():
            text = None  # images and badges only
        gone = text is None or (not text.strip() and line.strip() != "")
        shown.append("" if gone else text)
        hidden.append(gone)
    return shown, hidden


def _org_line(line: str, block: str | None) -> tuple[str | None, str | None]:
    m = _ORG_BLOCK.match(line)
    if block == "comment":
        return None, None if m and m.group(1).lower() == "end" and m.group(2).lower() == "comment" else "comment"
    if block is not None:
        return line, None if m and m.group(1).lower() == "end" and m.group(2).lower() == block else block
    if m and m.group(1).lower() == "begin":
        kind = m.group(2).lower()
        return (None if kind == "comment" else line), kind
    return (None if _ORG_COMMENT.match(line) else line), None


def _md_line(line: str, state: str | None) -> tuple[str | None, str | None]:
    """The line with comments cut (None when it is all comment), and the state after it:
    None, an open fence (its marker), or an open comment ("%%", "<!--")."""
    if state is not None and state[0] in "`~":
        m = _FENCE.match(line)
        return line, None if m and m.group(1)[0] == state[0] and len(m.group(1)) >= len(state) else state
    if state is None and (m := _FENCE.match(line)):
        return line, m.group(1)
    out, i, was_comment = [], 0, state is not None
    while i <= len(line):
        if state is not None:  # inside a comment: to its end
            close = "%%" if state == "%%" else "-->"
            j = line.find(close, i)
            if j < 0:
                return ("".join(out) if "".join(out).strip() else None), state
            i, state = j + len(close), None
            continue
        m = _MD_OPEN.search(line, i)
        if m is None:
            out.append(line[i:])
            break
        if m.group().startswith("`"):  # inline code: as it is, to its closing run
            end = line.find(m.group(), m.end())
            stop = len(line) if end < 0 else end + len(m.group())
            out.append(line[i:stop])
            i = stop
            continue
        out.append(line[i : m.start()])
        i, state, was_comment = m.end(), m.group(), True
    text = "".join(out)
    return (None if was_comment and not text.strip() else text), state


def trimmed(hidden: list[bool], first: int, last: int) -> tuple[int, int]:
    """first..last less the hidden lines at either end (last < first: all hidden)."""
    while first <= last and hidden[first - 1]:
        first += 1
    while last >= first and hidden[last - 1]:
        last -= 1
    return first, last


def shown(shown_lines: list[str], hidden: list[bool], first: int, last: int) -> str:
    """The text of lines first..last as an item gives it: each line as shown, each run of
    hidden lines one line saying how many were elided."""
    out, run = [], 0
    for n in range(first, last + 1):
        if hidden[n - 1]:
            run += 1
            continue
        if run:
            out.append(ELIDED.format(n=run, s="s" * (run != 1)))
            run = 0
        out.append(shown_lines[n - 1])
    if run:
        out.append(ELIDED.format(n=run, s="s" * (run != 1)))
    return "\n".join(out)


# -- what a prompt asks, and which sections answer it ---------------------------------

IDLE = frozenset("""
    a about above after again against all am an and any are aren't as at be because been before being below between
    both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from
    further had hadn't has hasn't have haven't having he her here hers herself him himself his how i i'm i've if in
    into is isn't it it's its itself let's me more most my myself no nor not of off on once only or other ought our
    ours ourselves out over own same she should shouldn't so some such than that that's the their theirs them
    themselves then there these they this those through to too under until up very was wasn't we were weren't what
    what's when where which while who whom why will with won't would wouldn't you your yours yourself yourselves
    ok okay k kk thanks thank thx ty yes yeah yep yup nope nah sure great good nice cool perfect awesome fine sounds
    lgtm hmm hm hi hello hey bye please pls plz continue go ahead proceed wow lol sorry quite right wrong
    just really actually maybe also still anyway again now
    tell show remind know want wanted need like trying figure thing things stuff something anything way
    again can't could you whats hows whys wheres im ive id
""".split())
"""Words of a prompt to an agent that say nothing about what it asks of a vault: English
stop words, small talk (`ok`, `thanks`, `sounds good`, `lgtm`) and a request's own words
(`tell me`, `remind me`, `I want`). They weigh nothing in a prompt's evidence."""

IDLE_KO = frozenset("""
    응 네 예 아니 아니야 아니요 그래 그래요 좋아 좋아요 좋네 좋다 계속 계속해 계속해줘 계속해요 고마워 고마워요 고맙습니다
    감사 감사해 감사해요 감사합니다 잘했어 잘했다 수고 수고했어 알겠어 알겠습니다 오케이 ㅇㅋ ㅇㅇ ㄱㄱ ㅋㅋ ㅎㅎ 굿 최고
    알려줘 알려주세요 알려줄래 알려 뭐야 뭐지 뭐였지 뭐였더라 뭐 뭔가 뭘 어떻게 어떻게든 어디서 어디 왜 언제 누가
    해줘 해주세요 해줄래 해봐 좀 혹시 정말 진짜 그냥 이거 저거 그거 그게 이게 저게 거 것 건 건데 거야
    싶어 싶은데 싶다 싶어요 있어 있었지 있었나 있나요 있을까 있어요 없어 할까 하자 하는 한번 다시
    보여줘 정리해줘 설명해줘 요약해줘 찾아줘 말해줘 내 나 저 제 우리 너 당신 오늘 지금 이제
    무슨 무엇 뭐라고 대해 대한 관해 관한 썼지 썼어 썼던 썼나 적었지 적었어 적었던 적어둔 말했지 말했던
""".split())
"""The same for Korean: small talk (`고마워`, `좋아 계속해`, `ㅇㅋ`) and a request's words
(`알려줘`, `뭐야`), as a run is or less a particle or ending (see core); with the Korean
for the words of asking about one's notes that IDLE and PLAIN hold in English (what,
about, wrote, said: `가치관에 대해 뭐라고 썼지`, "what did I write about values")."""

PLAIN = frozenset("""
    able add added again ago almost along already always another any anymore around ask asked away back bad
    be become begin best better big bit bought break bring build built buy call came can change changed changes
    come coming correct could current day days different do does done each easy else end enough even ever every
    exactly far fast feel few find first fix fixed follow found full get gets getting give given go goes going gone
    got happen happened happens hard have help high hold how idea important inside instead keep kept kind know land
    landing last later least leave left less let life like likely little live long look looking looks lose lost lot
    lots made main make makes making many matter may mean means might mind miss moment more most move moved moving
    much must need needed needs never new next nothing number off often old once one ones open other others own
    part people place point possible pretty problem probably put quick quickly rather reason right same say says
    second see seem seems set should show side simple since small so some sometimes soon start started starts
    stay still stop sure take takes taking than thing think though thought three through time times today together
    too took true try trying turn two under up use used uses using usual usually walk want way ways week well went
    whole will wish without work works world would write writing wrong year years yet
""".split())
"""Plain English words a prompt is phrased with (`bought`, `changed my mind`, `keep landing`,
`walk me through`): the vault may use them anywhere or nowhere, so a section that lacks
one is not the worse for it; one that holds it is the better (they count only where
held). A prompt of nothing else asks nothing of the vault (`nice work`, `that works now`):
no prompt of the dev sets (bench/prompts-dev.json's dev half, ../shared/eval/queries-dev.json)
that a note answers is made of them alone."""

PREDICATE = ("는데", "은데", "한지", "인지", "다가", "려고", "려면", "도록", "니까", "는", "고", "던", "둔", "면", "게",
             "돼", "된", "한", "할", "은")
"""Endings of a Korean predicate (바꾸는, 바꾸고, 포맷된, 나면, 처리돼): the prompt's phrasing,
counted only where held, as PLAIN is."""

ENDINGS = ("해주세요", "해줄래", "하려면", "했더라", "였더라", "해줘", "해요", "하는", "하기", "하고", "하면", "했던", "했어",
           "했지", "했나", "였지", "되는",
           "으려면", "려면", "인가요", "나요", "는데", "은데", "이야", "해", "한", "할", "된", "돼", "고", "야")
"""Verb endings a Korean word may carry in a prompt (설정하는: 설정), besides particles."""
VERB_SUFFIXES = ("하", "되")
"""What makes a verb of a noun in Korean (하다 and 되다 verbs: 설정하다, 점프하다, 처리되다),
left after its ending: the noun is what a note holds (설정, 점프)."""

_CODE = re.compile(r"[/\\~]|\w[._]\w|\(\)|^--?\w|[a-z][A-Z]")
"""A token that is code, not a word: a path, a file name, a symbol (foo_bar, a.b, f()),
an option, camelCase."""
_LATIN = re.compile(r"[^\W\d_]\w*|\d+")


EARNED_HITS = 3
"""Context looks for evidence in the sections of the top three hits: past them, a section
that holds the words is seldom the answer (measured on bench/prompts-dev.json)."""
EARNED_NOTES = 2
NEAR_BEST = 0.8
"""Of those, at most two notes are given, each only if its section's share is at least
NEAR_BEST of the best one's: a runner-up far behind the best is seldom an answer too."""
NAMED_SHARE = 0.5
NAMED_WORDS = 2
"""The top hit earns a place with less than `min_evidence` of the prompt's weight when the
prompt names it: its note's title, path or aliases and its section's heading hold at least
NAMED_SHARE of the weight, in at least NAMED_WORDS of the prompt's words (one word in
common is a coincidence, two in a title a topic), and its text at least NAMED_SHARE in all
(`how do I embed one section of another note`: `Embed a note in another note`)."""
ITEM_BUDGET = 0.5
"""An item takes at most this share of the budget: a long section is given as the window
around its best lines (the item names them; the agent reads on if it wants), and a
second answer has room. Never less than ITEM_FLOOR of it (a small budget goes whole to
the first item: half of it may not hold an item's header)."""
ITEM_FLOOR = 200


def item_room(budget: int, used: int) -> int:
    """What the next item may take of `budget`, `used` of it spent (see ITEM_BUDGET)."""
    return min(budget - used, max(int(budget * ITEM_BUDGET), min(budget, ITEM_FLOOR)))
LEAD_LINES = 3
"""A section is read with its note's opening paragraph, as far as this many lines: where a
note says what it is about (a summary, a definition, the page's first sentence)."""


def lead(shown_lines: list[str], start: int, headings: list) -> list[str]:
    """The note's opening paragraph: from its body's first line `start` (1-based), past
    headings and blank lines, its lines up to the next blank line or heading, at most
    LEAD_LINES of them."""
    heads = {h.line for h in headings}
    out: list[str] = []
    for n in range(start, len(shown_lines) + 1):
        line = shown_lines[n - 1]
        if out and (not line.strip() or n in heads or len(out) >= LEAD_LINES):
            break
        if line.strip() and n not in heads:
            out.append(line)
    return out


class Evidence(NamedTuple):
    """What a section holds of a prompt (Prompt.judge): `share`, the weighed share of the
    prompt's units it holds; `held` and `lacks`, those units; `named`, the weighed share its
    label (the note's title, path and aliases, the section's heading) holds of the units
    that always count (not the optional ones: a plain word in a title names nothing);
    `names`, those units; `about`, the units its label or its note's lead (the opening
    paragraph, where a note says what it is about) holds."""

    share: float
    held: list[str]
    lacks: list[str]
    named: float
    names: list[str]
    about: list[str]


def earned(evidence: list[Evidence | None], threshold: float) -> list[tuple[int, str]]:
    """Which of the top hits' best sections (`evidence`, best hit first; None: a hit with no
    section to judge) earn a place, and how, best hit first. A section earns with a share of
    at least `threshold` and near the best one's (NEAR_BEST): "strong" when its label or its
    note's lead holds some of the prompt's words (Evidence.about), "held" when only its
    text holds them; a section that lacks some of the prompt's words
    earns only strong (words scattered in a text are a coincidence more often than a topic).
    The top hit also earns "named" when the prompt names it (NAMED_SHARE). The spend follows
    the evidence: the first section that earns is given whatever its kind, more (another
    note, at most EARNED_NOTES, and a note's runner-up sections) only when strong.
    Threshold 0: every hit's sections, as many as fit."""
    if threshold <= 0:  # every hit, as many as fit: the budget filled, as before context was earned
        return [(i, "strong") for i, e in enumerate(evidence) if e is not None]
    best = max((e.share for e in evidence if e is not None), default=0.0)
    out = [(i, "strong" if e.about else "held") for i, e in enumerate(evidence)
           if e is not None and e.share >= threshold and e.share >= NEAR_BEST * best and (e.about or not e.lacks)]
    top = evidence[0] if evidence else None
    if top is not None and (not out or out[0][0] != 0) and top.share >= NAMED_SHARE and top.named >= NAMED_SHARE \
            and len(top.names) >= NAMED_WORDS:
        out.insert(0, (0, "named"))
    return [o for k, o in enumerate(out) if k == 0 or o[1] == "strong"][:EARNED_NOTES]


class Unit:
    """One thing a prompt names: a word (its forms: as typed, its stem, a typo's
    correction), a Korean word (its core, less particles and endings), or a code-shaped
    token (whole). `weight`: its rarity in the vault (idf); `optional`: it counts only
    where held (code and numbers: those no note holds say nothing of the vault)."""

    __slots__ = ("word", "forms", "core", "weight", "optional")

    def __init__(self, word: str, forms: tuple[str, ...] = (), core: str | None = None, weight: float = 0.0,
                 optional: bool = False):
        self.word, self.forms, self.core, self.weight, self.optional = word, forms, core, weight, optional

    def held(self, found: set[str], text: str) -> bool:
        if self.core is None:
            return any(f in found for f in self.forms)
        if len(self.core) < 3:
            return self.core in text
        return self.core in text or 2 * self.part(text) > 1

    def part(self, text: str) -> float:
        """The share of a Korean word's bigrams `text` holds (0 for a word of two syllables or
        fewer, or not Korean): as ranking matches Korean, a compound or an inflected word the
        text holds in part (컨벤션, 컨벤셔널) counts for that part where it is not held whole."""
        if self.core is None or len(self.core) < 3:
            return 0.0
        grams = {self.core[i : i + 2] for i in range(len(self.core) - 1)}
        return sum(g in text for g in grams) / len(grams)


def core(run: str) -> str:
    """A Korean word less one particle and one ending, and then the 하/되 that makes a verb
    of a noun (하다 and 되다 verbs: 설정하는: 설정, 점프하는: 점프), keeping at least two
    syllables (가치관이: 가치관)."""
    for tails in (stopwords_ko.PARTICLES, ENDINGS, VERB_SUFFIXES):
        for t in tails:
            if run.endswith(t) and len(run) - len(t) >= 2:
                run = run[: -len(t)]
                break
    return run


def predicate(run: str) -> bool:
    """Whether a Korean word is a predicate by its ending (바꾸는, 바꾸고, 나면): `는` and `은`
    end a noun too, as its topic (가치관은), so with them only a stem of one or two
    syllables (a verb's, mostly) is taken for one."""
    if run.endswith(("는", "은")) and not run.endswith(("는데", "은데")):
        return len(run) <= 3
    return run.endswith(PREDICATE)


def idle_ko(run: str) -> bool:
    """Whether a Korean word says nothing of what a prompt asks: small talk or a request's
    word (IDLE_KO), as it is, less its particle (뭐가: 뭐) or as its core; a stop word; or
    a particle alone (이랑 of git이랑: a word of other letters before it)."""
    return run in IDLE_KO or core(run) in IDLE_KO or stopwords_ko.is_stop(run) or run in stopwords_ko.PARTICLES \
        or any(run.endswith(p) and run[: -len(p)] in IDLE_KO for p in stopwords_ko.PARTICLES)


class Prompt:
    """What a prompt asks of the vault: its units, each weighed by rarity (`df` gives how
    many of `n` notes hold a term; `correct` a word's correction or None), and the words
    it leaves out (`idle`)."""

    def __init__(self, tokens: list[str], n: int, df: Callable[[str, bool], int], stem: Callable[[str], str],
                 correct: Callable[[str], str | None]):
        self.units: list[Unit] = []
        self.idle: list[str] = []
        seen: set[str] = set()

        def idf(d: int) -> float:  # its square root: a rare word counts more, not so much that one sinks a section
            return math.sqrt(math.log(1 + (n - d + 0.5) / (d + 0.5)))

        tokens_seen: set[str] = set()
        for tok in tokens:
            bare = tok.strip("\"'`,.;:!?()[]{}<>")
            if not bare or bare.lower() in tokens_seen:
                continue
            tokens_seen.add(bare.lower())
            if _CODE.search(bare) and not CJK_RUN.search(bare):
                words = _LATIN.findall(bare)
                self.units.append(Unit(bare, (bare.lower(),), None,
                                       max((idf(df(stem(w.lower()), False)) for w in words), default=0.0), True))
                continue
            for run in CJK_RUN.findall(bare):
                c = core(run)
                if len(run) < 2 or idle_ko(run) or c in seen:  # a syllable alone: a particle, mostly
                    self.idle.append(run)
                    continue
                seen.add(c)
                grams = [c[i : i + 2] for i in range(len(c) - 1)] or [c]
                self.units.append(Unit(run, (), c, idf(min(df(g, True) for g in grams)), predicate(run)))
            for w in _LATIN.findall(CJK_RUN.sub(" ", bare)):
                low = w.lower()
                if low in IDLE or low in seen or len(low) < 2 and not low.isdigit():
                    self.idle.append(w)
                    continue
                seen.add(low)
                s = stem(low)
                d = df(s, False)
                forms = [low, s]
                if d == 0 and not low.isdigit() and (fix := correct(low)):
                    forms += [fix, stem(fix)]
                    d = df(stem(fix), False)
                self.units.append(Unit(w, tuple(dict.fromkeys(forms)), None, idf(d), low.isdigit() or low in PLAIN))
        self.matcher = Matcher([f for u in self.units for f in u.forms], [])

    def __bool__(self) -> bool:
        return any(not u.optional for u in self.units)

    def judge(self, text: str, label: str = "", lead: str = "") -> Evidence:
        """How much of the prompt a section holds: `text`, its lines; `label`, what names it
        (its note's title, path and aliases, its heading); `lead`, its note's opening
        paragraph. An optional unit counts only where held; a Korean word not held counts
        for the share of its bigrams held (Unit.part), and is among those lacking. See
        Evidence."""
        whole = "\n".join((text, label, lead))
        terms = self.matcher.terms if self.matcher else (lambda _: set())  # none: Korean words only
        found, low = terms(whole), whole.lower()
        in_label, low_label = terms(label), label.lower()
        in_lead, low_lead = terms(lead), lead.lower()
        held, lacks, names, about, got, total, named, must = [], [], [], [], 0.0, 0.0, 0.0, 0.0
        for u in self.units:
            must += 0.0 if u.optional else u.weight
            if u.held(found, low):
                held.append(u.word)
                got += u.weight
                total += u.weight
                if not u.optional and u.held(in_label, low_label):
                    names.append(u.word)
                    named += u.weight
                if not u.optional and (u.word in names or u.held(in_lead, low_lead)):
                    about.append(u.word)
            elif not u.optional:
                lacks.append(u.word)
                total += u.weight
                got += u.weight * u.part(low)
        return Evidence(got / total if total else 0.0, held, lacks, named / must if must else 0.0, names, about)
