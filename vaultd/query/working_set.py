"""The working set: read a note, context within a budget, pins, HOT, recent, the list of
every note. The Vault's working set job (see vault.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import QueryError
from ..note import Note, headings_of
from ..parse import decode
from ..paths import read_head
from ..render import cost
from ..store.index import CJK_RUN
from ..store.state import changed_ns
from . import context as ctx
from .operators import note_filter
from .ranking import bigrams, content_words, stem
from .snippets import Matcher
from .tiers import MINUTE_NS, bulk_minutes, hot

if TYPE_CHECKING:
    from ..store.vault_state import VaultState
    from .links import LinkGraph
    from .search import Searcher


class _Pack:
    """The items context gives, within `budget` (in `unit`): never an empty item nor an
    inverted range, never lines already given, never over the budget."""

    def __init__(self, budget: int, unit: str):
        self.budget, self.unit = budget, unit
        self.items: list[dict] = []
        self.used = 0
        self.taken: dict[str, list[tuple[int, int]]] = {}

    def add(self, item: dict | None) -> bool:
        """Give `item` if it says something, overlaps nothing given and fits; whether it was."""
        if item is None or item["last"] < item["first"] or not item["text"].strip():
            return False  # nothing to give: never an empty item, nor an inverted range
        spans = self.taken.setdefault(item["path"], [])
        if any(a <= item["last"] and item["first"] <= b for a, b in spans):
            return False
        c = ctx.cost(ctx.render(item), self.unit)
        if self.used + c > self.budget:
            return False
        item["cost"] = c
        self.items.append(item)
        spans.append((item["first"], item["last"]))
        self.used += c
        return True


def _maker(show: Callable[[str], str], note: Note, seen: list[str], hidden: list[bool], kind: str, why: str,
           score: float | None = None, more: dict | None = None):
    """A hit's or HOT note's item maker: lines a..b of `note` as shown, its path as `show`
    gives it, with `kind`, `why`, its score and `more`."""
    path = show(note.path)
    more = {**({} if score is None else {"score": round(score, 4)}), **(more or {})}  # a hit's: its note's

    def make(a: int, b: int) -> dict:
        a, b = ctx.trimmed(hidden, a, b) if hidden else (a, b)
        return {"kind": kind, "path": path, "title": note.title, "tags": note.tags, "first": a, "last": b,
                "text": ctx.shown(seen, hidden, a, b) if hidden else "", "why": why, **more}
    return make


class WorkingSet:
    """The Vault's working set: it finds notes by the links job, and ranks hits by the
    search job."""

    def __init__(self, core: VaultState, links: LinkGraph, searcher: Searcher):
        self.core = core
        self.links = links
        self.searcher = searcher

    def read(self, name: str, lines: tuple[int, int] | None = None, heading: str | None = None,
             agent: bool = False, budget: int | None = None, unit: str = "tokens") -> dict:
        """A note's text (all, a line range, or one heading's section), read from the file: of
        a file over the size cap, only what is indexed (`truncated`, and its lines so far).
        The whole note is the file's text as it holds it (line ends, final newline); a range
        or section is its lines, each ended by a newline but the last. Within `budget` (in
        `unit`; None: all of it): a longer text is its first whole lines that fit (`more`;
        `next`, the `lines` that ask for the rest, of the section with `heading`), a line
        longer alone than the budget its first characters (`line_cut`).
        A person's read counts towards HOT; an `agent`'s is counted apart."""
        core = self.core
        path = self.links.find_note(name)
        note = core.notes[path]
        try:
            data, size = read_head(core.root_str, path, core.config.index.max_file_mb << 20)
        except OSError as e:
            raise QueryError(f"cannot read {path}: {e.strerror}") from None
        truncated = size > len(data)
        text = decode(data)[0]
        all_lines = text.split("\n")
        if text.endswith("\n"):
            all_lines.pop()
        first, last = 1, len(all_lines)
        if heading is not None:
            first, last = _section(note, heading, len(all_lines))
        base = first if heading is not None else 1  # where `lines` count from
        if lines is not None:
            a, b = lines
            if a < 1 or b < a:
                raise QueryError(f"lines: expected A:B with 1 <= A <= B, got {a}:{b}")
            if a > last - first + 1:
                raise QueryError(f"lines {a}:{b}: past the end ({'the section' if heading else path} has "
                                 f"{last - first + 1} lines" + (" as far as read: the file is over index.max_file_mb"
                                                                if truncated else "") + ")")
            first, last = max(first, first + a - 1 if heading else a), min(last, (first + b - 1) if heading else b)
        core.state.touch(path, agent)
        page = {"more": False, "next": None, "line_cut": None}
        if lines is None and heading is None and not truncated:
            # the whole note is its file's text, as it holds it (CRLF line ends, a BOM, the last
            # newline): an agent that writes it back, or edits a piece of it, changes nothing else
            body = data.decode("utf-8", errors="replace")
        else:
            body = "\n".join(all_lines[first - 1 : last])
        if budget is not None and cost(body, unit) > budget:
            shown, cut = _within(all_lines[first - 1 : last], budget, unit)
            end = first + len(shown) - 1
            body = "\n".join(shown)
            page = {"more": end < last, "next": [end + 2 - base, last + 1 - base] if end < last else None,
                    "line_cut": first if cut else None}
            last = end
        return {"path": path, "title": note.title, "first": first, "last": max(first - 1, last),
                "total_lines": len(all_lines), "truncated": truncated, **page, "text": body}

    def context(self, q: str, budget: int, unit: str = "tokens", scope: str = "warm", hits: int = 8,
                show: Callable[[str], str] | None = None, with_hot: bool | None = None,
                explain: bool = False) -> dict:
        """The HOT notes' first lines and the best sections of the top hits for `q` that earn
        their place (context.earned: a section holds at least `[context] min_evidence` of the
        query's weighed content words, with its title, heading or its note's opening
        paragraph holding some when it lacks any; or the top hit's, when the query names it
        in its title and heading), never over `budget`, each item with its line range, at
        most half the budget each: nothing when nothing earns it. The first section that
        earns is given, more only when its title, heading or note's opening paragraph holds
        query words. With no words in `q`, the HOT notes may fill all of the budget.
        `with_hot`: begin with the HOT notes' openings; None (the default): only for a `q`
        with no words (a prompt's context does not repeat the working set the session start
        gave; a HOT note the prompt earns comes as a hit). With `explain`, each hit says why
        it passed (`explain`: its share, the threshold, the words held and lacking, the
        share and words its title and heading name, how it earned, the words that weigh
        nothing), in its `why` too. Each item's path is as `show` gives it (paths.shown),
        and its header is counted so. Context is an agent's retrieval: the notes it gives
        are counted apart from a person's reads."""
        show = show or (lambda rel: rel)
        with_hot = not q.strip() if with_hot is None else with_hot
        pack = _Pack(budget, unit)
        if with_hot:
            self._give_hot(pack, q, show)
        _, ranked, p, _ = self.searcher.rank(q, hits, scope)
        prompt = self._prompt(p)
        if not prompt:
            ranked = []  # nothing the query asks of a vault (small talk, stop words, code no note holds)
        self._give_hits(pack, self._hit_sections(ranked, p), prompt, show, explain)
        return {"query": q, "budget": budget, "unit": unit, "used": pack.used, "generation": self.core.generation,
                "items": pack.items}

    def _lines_of(self, note: Note) -> tuple[list[str], int, list[str], list[bool]]:
        """The note's lines, where its body starts (past hidden lines too), and each line as
        shown and whether it is hidden (context.visible)."""
        try:  # as far as the size cap: what was indexed (a 1 GB note read whole took 42 s and 4.4 GB)
            text = decode(read_head(self.core.root_str, note.path, self.core.config.index.max_file_mb << 20)[0])[0]
        except OSError:
            return [], 1, [], []
        lines, start = ctx.note_lines(text, note.path)
        seen, hidden = ctx.visible(lines, note.path)
        while start <= len(lines) and (hidden[start - 1] or not seen[start - 1].strip()):
            start += 1
        return lines, start, seen, hidden

    def _give_hot(self, pack: _Pack, q: str, show: Callable[[str], str]) -> None:
        """The HOT notes' first lines into `pack`, the working set first, within a quarter of
        the budget (all of it for a `q` with no words)."""
        core, notes = self.core, self.core.notes  # one table throughout (a commit may replace it)
        budget, unit = pack.budget, pack.unit
        hot_items = hot(notes, core.state.state, core.config.tiers, capture=core.config.capture.folder)
        hot_budget = budget // 4 if q.strip() else budget
        for h in hot_items:  # the working set first, within a quarter of the budget
            if pack.used >= hot_budget:
                break  # no more room: not read
            note = notes[h["path"]]
            make = _maker(show, note, [""], [False], "hot", ", ".join(h["why"]))
            if pack.used + ctx.cost(ctx.render(make(1, 1)), unit) > min(hot_budget, budget):
                continue  # not even its header fits (a line only adds to it): not read
            lines, start, seen, hidden = self._lines_of(note)
            if start > len(lines):
                continue
            last = min(len(lines), start + 2)
            make = _maker(show, note, seen, hidden, "hot", ", ".join(h["why"]))
            pack.add(ctx.fit(lines, start, last, start, make, min(hot_budget - pack.used, budget - pack.used), unit))

    def _hit_sections(self, ranked, p) -> list[tuple]:
        """Per hit that may answer: (score, note, lines, shown lines, hidden, headings, its
        sections best first, (where its body starts, its lead))."""
        # a note's sections are weighed by the query's content words: `do` and `I` are rare in
        # notes, and weighed by rarity they picked `Embed a PDF` for `how do I embed a note`
        content = Matcher(*content_words(p.words, p.stems), p.parsed.phrases)
        matcher = Matcher(p.words, p.stems, p.parsed.phrases)
        runs = [set(bigrams(r)) for r in dict.fromkeys(CJK_RUN.findall(" ".join(p.parsed.words).lower()))]
        sections = []  # per hit: (score, note, lines, shown lines, hidden, headings, its sections best first,
        # (where its body starts, its lead))
        for score, note in ranked:
            lines, start, seen, hidden = self._lines_of(note)
            if not lines:
                continue
            if runs and note.path not in p.parts and not _answers(seen, matcher, runs):
                continue  # found by a particle's bigram alone (관이 of 가치관이 in 기관이나): no answer
            heads = headings_of(note)
            if start > len(lines):  # no body (an org-roam stub: properties and a title): its title line, if any
                at = _title_line(lines, note.title)
                if at is not None:
                    sections.append((score, note, lines, seen, hidden, heads, [(at, at, at, None)], (start, [])))
                continue
            secs = ctx.ranked_sections(seen, heads, content, start, limit=2) if content else []  # two rounds below
            if not secs and (near := p.parts.get(note.path, (None,) * 3)[2]) is not None and near <= len(lines):
                # none of the words in it (semantic recall found it): the section nearest the query's meaning
                first, last = ctx.section(lines, heads, max(near, start), start)
                secs = [(first, last, first, next((h.text for h in heads if h.line == first), None))]
            sections.append((score, note, lines, seen, hidden, heads,
                             secs or [(*ctx.section(lines, heads, start, start), start, None)],
                             (start, ctx.lead(seen, start, heads))))
        return sections

    def _give_hits(self, pack: _Pack, sections: list[tuple], prompt: ctx.Prompt, show: Callable[[str], str],
                   explain: bool) -> None:
        """Into `pack`: the best section of each hit in `sections` that earns its place, then
        the strong notes' runners-up that earn theirs, while the budget lasts (below)."""
        budget, unit = pack.budget, pack.unit
        threshold = self.core.config.context.min_evidence

        # The best section of each of the top hits that earns its place (context.earned: at most
        # EARNED_NOTES strong, each near the best one's share, or the top hit the prompt names), then
        # the strong notes' runners-up that earn theirs, while the budget lasts
        def judge(note: Note, opening: tuple[int, list[str]], seen: list[str], sec) -> ctx.Evidence:
            """The section's evidence (context.Prompt.judge): its lines, its label (its note's
            title, path and aliases, its heading) and its note's lead."""
            first, last, _, heading = sec
            label = "\n".join([note.title, note.path.replace("/", " "), *note.aliases, heading or ""])
            return prompt.judge("\n".join(seen[first - 1 : last]), label, "\n".join(opening[1]))

        judged = [sorted([(sec, judge(note, opening, seen, sec)) for sec in secs],
                         key=lambda j: -j[1].share)  # the section that holds most of the query first
                  for _, note, _, seen, _, _, secs, opening in
                  (sections if threshold <= 0 else sections[: ctx.EARNED_HITS])]  # 0: every hit, as before
        earned = ctx.earned([j[0][1] if j else None for j in judged], threshold)
        for round_ in (0, 1):
            for i, how in earned:
                score, note, lines, seen, hidden, heads, *_ = sections[i]
                if round_ >= len(judged[i]) or (round_ and how != "strong"):
                    continue
                (first, last, focus, heading), ev = judged[i][round_]
                if round_ and ev.share < threshold:
                    continue
                room = ctx.item_room(budget, pack.used)
                why = f"hit {i + 1} for the query" + (f", section “{heading}”" if heading else "")
                more = {}
                if explain:
                    more["explain"] = {"share": round(ev.share, 3), "threshold": threshold, "held": ev.held,
                                       "lacks": ev.lacks, "named": round(ev.named, 3), "names": ev.names,
                                       "earned": how, "ignored": prompt.idle}
                    why += f"; holds {', '.join(ev.held)}: {ev.share:.2f} of the query's weight" + \
                        (f" (lacks {', '.join(ev.lacks)})" if ev.lacks else "") + \
                        (f"; its title or heading names {', '.join(ev.names)}: {ev.named:.2f}" if how == "named"
                         else f" >= {threshold}" + ("" if how == "strong" else ", in its text alone"))
                make = _maker(show, note, seen, hidden, "hit", why, score, more)
                whole = make(first, ctx.whole_section(lines, heads, first, last))
                if whole["last"] > last and not any(ln.strip() for ln in seen[first:last]):
                    last = whole["last"]  # a heading over nothing but its subsections: what they say, as it fits
                elif whole["last"] > last and ctx.cost(ctx.render(whole), unit) <= min(room, budget * 0.4):
                    last = whole["last"]  # with its subsections, while that stays a modest share
                if pack.add(ctx.fit(lines, first, last, focus, make, room, unit)):
                    self.core.state.touch(note.path, agent=True)

    def _prompt(self, p) -> ctx.Prompt:
        """What a query asks of this vault (context.Prompt), its words weighed by the index."""
        s = self.core.index.searcher()

        def df(term: str, cjk: bool) -> int:
            fs = ("body_ko", "title_ko") if cjk else ("body", "title")
            return max(s.doc_freq(f, term) for f in fs)

        tokens = [*p.parsed.words, *p.parsed.required, *(w for ph in p.parsed.phrases for w in ph.split())]
        return ctx.Prompt(tokens, max(1, s.num_docs), df, stem, lambda w: self.searcher.vocabulary().correct(w))

    def pin(self, name: str, on: bool) -> dict:
        path = self.links.find_note(name)
        changed = self.core.state.pin(path, on)
        return {"path": path, "pinned": on, "changed": changed}

    def pins(self) -> dict:
        notes = self.core.notes
        return {"pins": [{"path": p, "title": notes[p].title if p in notes else None}
                         for p in self.core.state.state.pins]}

    def hot(self) -> dict:
        core = self.core
        return {"hot": hot(core.notes, core.state.state, core.config.tiers, capture=core.config.capture.folder)}

    def recent(self, days: float) -> dict:
        """Notes changed in the last `days`, newest first; not those a bulk stamp (a clone, a
        copy, a checkout: see tiers.BULK) dated, which no one edited (a fresh copy of a vault
        listed every note). Capture notes count when an agent's entry was remembered in them
        (vaultd writes them, for the agent)."""
        core = self.core
        cutoff = time.time() - days * 86400
        st = core.state.state
        notes = core.notes
        bulk = bulk_minutes(notes)
        agents = core.config.capture.folder + "/" if core.config.capture.folder else None
        items = sorted(((m, p) for p, n in notes.items()
                        if (m := n.mtime_ns if agents and p.startswith(agents) else
                            changed_ns(st, p, n.mtime_ns, n.size)) / 1e9 >= cutoff
                        and not (m == n.mtime_ns and m // MINUTE_NS in bulk)), reverse=True)
        return {"days": days, "recent": [{"path": p, "title": notes[p].title,
                                          "mtime": round(m / 1e9, 3)} for m, p in items]}

    def note_list(self, tags: list[str] = (), paths: list[str] = (), headings: bool = False) -> dict:
        """Every note (with these tags, under these folders), by path: its title, aliases,
        Denote identifier, tags and date; with `headings`, its headings too."""
        keep = note_filter(tags, paths)
        notes = self.core.notes  # replaced, never changed in place
        out = []
        for p in sorted(notes):
            n = notes[p]
            if not keep(n):
                continue
            it = {"path": p, "title": n.title, "aliases": list(n.aliases), "id": n.id, "tags": list(n.tags),
                  "date": n.date}
            if headings:
                it["headings"] = [{"level": h.level, "text": h.text, "line": h.line, "anchor": h.anchor}
                                  for h in headings_of(n)]
            out.append(it)
        return {"total": len(out), "notes": out}


def _within(lines: list[str], budget: int, unit: str) -> tuple[list[str], bool]:
    """The first of `lines` that fit in `budget` (each counted with its newline), and whether
    the first line, longer alone than the budget, is given in part (its first characters):
    a page of a read is never empty."""
    used = 0
    for i, line in enumerate(lines):
        used += cost(line + "\n", unit)
        if used > budget:
            return (lines[:i], False) if i else ([_prefix(line, budget, unit)], True)
    return lines, False


def _prefix(line: str, budget: int, unit: str) -> str:
    """The longest start of `line` that costs at most `budget`."""
    lo, hi = 0, len(line)
    while lo < hi:  # the cost grows with the length
        mid = (lo + hi + 1) // 2
        if cost(line[:mid], unit) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return line[:lo]


def _answers(lines: list[str], matcher: Matcher, runs: list[set[str]]) -> bool:
    """Whether a note holds a query word: a Latin word, or at least half the bigrams of one
    Hangul/Han/Kana run (a particle or an ending alone is one bigram of a word's three)."""
    held = matcher.terms("\n".join(lines))
    return any(t in held for t in matcher.latin) or any(2 * len(r & held) >= len(r) for r in runs)


def _title_line(lines: list[str], title: str) -> int | None:
    """The line (1-based) among a note's first that shows its title (#+title:, front
    matter, a heading), or None."""
    want = title.casefold().strip()
    return next((i for i, x in enumerate(lines[:50], 1) if want and want in x.casefold()), None)


def _section(note: Note, heading: str, n_lines: int) -> tuple[int, int]:
    """First and last line of the section under `heading` (text, anchor, or custom id)."""
    want = heading.strip().lstrip("#*").strip().casefold()
    hs = sorted(headings_of(note), key=lambda h: h.line)
    for i, h in enumerate(hs):
        if h.text.casefold() == want or h.anchor.casefold() == want:
            end = next((o.line - 1 for o in hs[i + 1 :] if o.level <= h.level), n_lines)
            return h.line, end
    raise QueryError(f"{note.path} has no heading {heading!r}")
