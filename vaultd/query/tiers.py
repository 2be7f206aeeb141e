"""HOT / WARM / COLD: which notes an agent should load first, and why."""

from __future__ import annotations

import fnmatch
import functools
import math
import re
import time
from collections import Counter
from collections.abc import Callable

from ..config import Tiers
from ..note import Note, held
from ..store.state import State, changed_ns


@functools.lru_cache(maxsize=8)
def _cold_pattern(globs: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(fnmatch.translate(g) for g in globs) or "(?!)")


def cold_test(cfg: Tiers) -> Callable[[str], bool]:
    """Whether a path is COLD (`[tiers] cold`), as a test made once for the many paths a
    search or the HOT set asks it of."""
    match = _cold_pattern(tuple(cfg.cold)).match
    return lambda path: match(path) is not None


def hot(notes: dict[str, Note], state: State, cfg: Tiers, now: float | None = None,
        capture: str | None = None) -> list[dict]:
    """The HOT set: each note with its score and the reasons it is hot, best first, capped.
    `capture`: the capture folder, whose notes' tags are an agent's (`remember`), never hot
    tags: only a person's reads, pins and edits make a capture note HOT."""
    agents = capture + "/" if capture else None
    now = now or time.time()
    day = 86400.0
    hot_tags, done_tags = set(cfg.hot_tags), set(cfg.done_tags)
    pins, access = set(state.pins), state.access
    agent_w = cfg.agent_access_weight
    agent = state.agent_access if agent_w else {}  # agents' reads count only when weighted
    agent_last = state.agent_last_access if agent_w else {}
    # Most notes are none of pinned, read, changed lately, or tagged hot and touched lately:
    # they are let go at one test, 20x faster than the whole loop. Its cut-offs are a second
    # early, so that it never lets go a note the exact tests below would keep; none at all
    # for `inf` days, and no "touched lately" cut-off before 1970, where a note never read
    # counts as touched (at 0).
    never = -(1 << 80)  # a cut-off no note is older than
    old, cool = ((now - days * day) * 1e9 for days in (cfg.hot_days, cfg.warm_after_days))
    old_ns = int(old) - 1_000_000_000 if math.isfinite(old) else never
    cool_ns = int(cool) - 1_000_000_000 if math.isfinite(cool) and cool > 1e9 else never
    written = state.written

    groups, bulk = _by_change(notes, frozenset(hot_tags), agents)
    is_cold = cold_test(cfg)

    def rank(path: str, n: Note) -> tuple[float, str, list[str]] | None:
        m = changed_ns(state, path, n.mtime_ns, n.size) if path in written else n.mtime_ns
        # stamped with many others at once (a clone, a copy): no edit of the user's, so not
        # "changed lately"; but it does not make a hot tag stale (a clone keeps `active` notes HOT)
        stamped = m // MINUTE_NS in bulk
        if (m < old_ns or stamped) and path not in access and path not in pins and path not in agent and (
                (m < cool_ns and path not in state.last_access and path not in agent_last)
                or hot_tags.isdisjoint(n.tags) or (agents and path.startswith(agents))):
            return None
        if is_cold(path):
            return None
        pinned = path in pins
        tags = set(n.tags) if agents is None or not path.startswith(agents) else set(n.tags) - hot_tags
        if tags & done_tags and not pinned:
            return None
        changed_days = (now - m / 1e9) / day
        last = max(state.last_access.get(path, 0.0), agent_last.get(path, 0.0))
        touched_days = min(changed_days, (now - last) / day)
        reasons, score = [], 0.0
        if pinned:
            reasons.append("pinned")
            score += cfg.pin_weight
        for t in sorted(tags & hot_tags):
            if touched_days <= cfg.warm_after_days or pinned:
                reasons.append(f"tag:{t}")
                score += cfg.tag_weight
        if changed_days <= cfg.hot_days and not stamped:
            reasons.append(f"changed {max(0, int(changed_days))} days ago")
            score += cfg.recent_weight * (1 - changed_days / (2 * cfg.hot_days))
        reads = state.access.get(path, 0)
        if reads:
            reasons.append(f"read {reads} time{'s' * (reads != 1)}")
            score += cfg.access_weight * math.log2(1 + reads)
        by_agents = agent.get(path, 0)
        if by_agents:
            reasons.append(f"read by agents {by_agents} time{'s' * (by_agents != 1)}")
            score += agent_w * math.log2(1 + by_agents)
        if reasons and (reads + by_agents == 0 or len(reasons) > 1 or touched_days <= cfg.warm_after_days):
            return score, path, reasons
        return None

    # The notes pinned, read or written by vaultd are weighed one by one; any other is hot
    # only for its hot tags and for having changed lately, and among those with as many hot
    # tags ranks by when it changed: each such group is taken latest first, only until the
    # cap is reached (a vault whose 100,000 notes all changed this week weighed every one,
    # 2.5 s a call).
    special = set(pins).union(access, agent, state.last_access, agent_last, written)
    ranked = [r for p in special if p in notes and (r := rank(p, notes[p])) is not None]
    for tagged, group in groups:
        taken, least = 0, None
        for neg_m, path in group:
            if -neg_m < old_ns and (not tagged or -neg_m < cool_ns):
                break  # older than the cut-offs: none from here on is hot
            if path in special:
                continue
            r = rank(path, notes[path])
            if r is None:
                continue
            if taken >= cfg.hot_max and r[0] != least:
                break  # past the cap, and not tied with the last one taken
            ranked.append(r)
            taken, least = taken + 1, r[0]
    ranked.sort(key=lambda t: (-t[0], t[1]))
    return [{"path": p, "title": notes[p].title, "tags": notes[p].tags, "score": round(sc, 3), "why": why}
            for sc, p, why in ranked[: cfg.hot_max]]


_by_change_of: tuple = (lambda: None, None, [], frozenset())

MINUTE_NS = 60 * 10**9
BULK = (10, 200)
"""A minute in which at least this many notes got their mtime (at most the second number;
else half the notes) is a bulk stamp: a clone, a copy, a checkout, a sync's first run.
Those mtimes are no edits of the user's, so they make no note HOT (a fresh copy of a vault
made every note "changed 0 days ago")."""


def bulk_minutes(notes: dict[str, Note]) -> frozenset[int]:
    """The minutes (mtime_ns // MINUTE_NS) of bulk stamps among `notes` (see BULK)."""
    per_minute = Counter(n.mtime_ns // MINUTE_NS for n in notes.values())
    least = max(BULK[0], min(BULK[1], len(notes) // 2))
    return frozenset(m for m, count in per_minute.items() if count >= least)


def _by_change(notes: dict[str, Note], hot_tags: frozenset[str], agents: str | None
               ) -> tuple[list[tuple[int, list]], frozenset[int]]:
    """The notes grouped by how many hot tags count for each (none for a capture note's), each
    group as (-mtime, path), latest first, leaving out those of a bulk stamp (see BULK) with no hot tag;
    and the minutes of bulk stamps: worked out once per note table (a table is replaced,
    never changed in place, at each commit)."""
    global _by_change_of
    of, key, groups, bulk = _by_change_of
    if of() is not notes or key != (hot_tags, agents):
        bulk = bulk_minutes(notes)
        by: dict[int, list[tuple[int, str]]] = {}
        for p, n in notes.items():
            k = len(hot_tags.intersection(n.tags)) if n.tags and not (agents and p.startswith(agents)) else 0
            if not k and n.mtime_ns // MINUTE_NS in bulk:
                continue  # hot, if at all, only by its tags
            by.setdefault(k, []).append((-n.mtime_ns, p))
        groups = [(k, sorted(g)) for k, g in by.items()]
        _by_change_of = (held(notes), (hot_tags, agents), groups, bulk)  # held weakly (see note.NoteTable)
    return groups, bulk
