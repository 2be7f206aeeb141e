"""Configuration: one typed object decoded from TOML. Every default lives here.

`config.example.toml` lists every key with its default; a test proves the two
agree. Paths left empty are derived in `Config.load()` from the vault path and
the XDG directories, with `VAULTD_*` environment overrides (one helper each).
"""

from __future__ import annotations

import os
import re
import socket as so
import sys
from pathlib import Path

import msgspec

from .errors import ConfigError, explain_validation
from .paths import runtime_dir, vault_name, xdg_dir

# sun_path is 108 bytes on Linux, 104 on macOS and the BSDs, including the terminating NUL.
MAX_SOCKET_PATH = 107 if sys.platform.startswith("linux") else 103

LOG_LEVELS = ("debug", "info", "warning", "error")


class Watch(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    debounce_ms: int = 300
    """A path is flushed after this much quiet..."""
    max_delay_ms: int = 2000
    """...or at the latest this long after its first event."""
    extensions: list[str] = msgspec.field(default_factory=lambda: [".md", ".org"])
    ignore_dirs: list[str] = msgspec.field(
        default_factory=lambda: [".git", ".obsidian", ".trash", ".stversions", "node_modules"]
    )
    rescan_s: float = 600.0
    """A full rescan (a stat scan, as at start) this often, a safety net for changes inotify
    never reported (a network file system, a folder moved out and still watched); 0 = never."""
    fallback_rescan_s: float = 30.0
    """While some folders cannot be watched (the inotify watch limit, a watcher that failed),
    the vault is rescanned this often instead."""


class Index(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    heap_mb: int = 64
    """Tantivy writer heap, shared by its threads (at least 15 MB per thread)."""
    max_file_mb: int = 20
    """Text past this many MB of a file is not indexed (the note is, with a problem noted)."""
    workers: int = 0
    """Processes parsing big batches (a first index, a rescan): 0 = one per core, 1 = none."""


class Search(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    limit: int = 10
    title_boost: float = 3.0
    heading_boost: float = 2.0
    tag_boost: float = 2.0
    path_boost: float = 1.5
    body_boost: float = 1.0
    candidates: int = 50
    """How many BM25 hits are re-scored by the blend below before the top `limit` are kept."""
    recency_weight: float = 0.2
    """A note dated today scores up to (1 + this) times its BM25..."""
    half_life_days: float = 180.0
    """...and the lift halves every this many days."""
    cold_factor: float = 0.5
    """COLD notes (tiers.cold) score this times their BM25."""
    anchor_weight: float = 1.0
    """A note whose inbound link labels hold all the query's words scores (1 + this) times."""
    coverage_weight: float = 0.7
    """A note holding a share c of the query's words (stop words aside) scores (1 - this + this * c) times."""
    exact_title_weight: float = 0.5
    """A note whose title or an alias is the query, word for word (case, `-`, `_` and spaces
    aside), scores (1 + this) times: `properties` finds Properties before Properties view."""
    conflict_copies: str = "collapse"
    """A sync tool's conflict copy of a note (parse/conflicts.py: Syncthing, Dropbox, Nextcloud,
    Obsidian Sync, git mergetool): collapse: left out of the hits when its note is one of them
    (that hit names it under `conflicts`), shown when it alone holds the words; below: shown,
    ranked just below its note; hide: never shown. `vaultq problems` lists every one."""


class Semantic(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool = False
    """Semantic recall: each note's sections embedded (in the background) and the best
    section's closeness to the query fused into the ranking. Needs `pip install 'vaultd[semantic]'`."""
    weight: float = 0.4
    """The share of a top candidate's score that is its best section's cosine, placed between
    the lowest and the highest among the candidates (the rest: its lexical score as a share
    of the best one's), when no candidate holds every word of the query..."""
    matched_weight: float = 0.0
    """...when one does (a single word the notes hold, too): 0, the words alone rank them and
    the query is not embedded (no time spent). Measured on the dev set (bench/quality.py
    --semantic --dump, the fusion replayed): the semantic part helped queries whose words
    fall short (MRR 0.66 -> 0.84) and not those whose words all match (0.908 at 0, 0.909 at
    0.25, questions 0.019 worse at 0.25)..."""
    cjk_weight: float = 0.15
    """...and for Hangul/Han/Kana queries, whose words are matched by bigrams and not counted,
    so that whether they all match is not known."""
    cjk: bool = True
    """Embed Hangul/Han/Kana sections and queries with the multilingual model (slower to
    build); false: such queries get no semantic part (the English model cannot read them)."""
    scan: int = 10
    """When the words find fewer notes than this, and none holds every word of the query, the
    notes nearest the query by their vectors join the candidates (up to this many); 0: never."""


SPLIT_MODES = ("auto", "propose", "off")
CONFLICT_MODES = ("collapse", "below", "hide")


class Split(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    mode: str = "auto"
    """auto: split a note that grows past the threshold while vaultd watches it, and only
    propose those already over it when first seen; propose: only propose; off: neither.
    `vaultd run --split MODE` and VAULTD_SPLIT override it."""
    threshold: int = 15360
    """Notes larger than this many bytes are split into parts of at most this size."""
    warn: int = 8192
    """Notes larger than this are listed as growing."""
    quiet: float = 60.0
    """Only notes unchanged for this many seconds (and with no editor lock) are split."""
    exclude: list[str] = []
    """Globs of notes never split."""
    host: str = ""
    """The one machine whose vaultd writes into this vault (a vault synced between machines:
    Syncthing, Dropbox, iCloud, git), by its host name as `hostname` prints it: splits (auto
    and by hand), undo, and `remember`. vaultd on another host indexes and answers, and
    refuses every write, saying why. Empty: any host (vaultds on one machine take turns by
    the writer lock). `[capture] host` says the same; see Config.writes_elsewhere."""


class Tiers(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    cold: list[str] = msgspec.field(default_factory=lambda: ["archive/**", "*/archive/**"])
    """Globs (vault-relative) of the COLD archive: indexed, ranked down, never HOT."""
    hot_tags: list[str] = msgspec.field(default_factory=lambda: ["active", "urgent", "todo"])
    done_tags: list[str] = msgspec.field(default_factory=lambda: ["done"])
    hot_days: float = 7.0
    """Notes changed this recently are HOT."""
    warm_after_days: float = 30.0
    """A HOT-by-tag note untouched (no change, no access) this long is demoted."""
    hot_max: int = 100
    min_results: int = 3
    """Search leaves COLD notes out unless WARM gives fewer hits than this."""
    tag_weight: float = 3.0
    pin_weight: float = 5.0
    recent_weight: float = 2.0
    access_weight: float = 1.0
    """HOT score = the weights of the reasons a note has (access: scaled by log2 of its count)."""
    agent_access_weight: float = 0.0
    """Reads by agents (context, the MCP server, hooks) are counted apart from a person's;
    they count towards HOT as a person's reads do, times this (0: not at all)."""


class Context(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    min_evidence: float = 0.75
    """A section enters `context` (and so the prompt hook) only with evidence that it answers
    the query (see query/context.py, `earned`): it holds at least this share of the query's
    content words, each weighed by its rarity in the vault (idf), with its note's title,
    path, aliases and opening paragraph (words no note holds count against it; stop words,
    small talk and a request's own words weigh nothing; code-shaped tokens count only where
    held; a Korean word held in part counts for its part), and, when it lacks some of them,
    its title, heading or its note's opening paragraph holds some; or it is the top hit's
    and its title and heading hold half the query's weight (two words at least) and its
    text half. The first section that earns is given, more (another note, the note's
    runner-up sections) only when its note's title, heading or opening paragraph holds
    query words; an item takes at most half the budget. When no section earns, context is
    empty. 0: every top hit (the budget filled)."""


CAPTURE_FORMATS = ("md", "org")


class Route(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A `[[capture.route]]` rule: an entry it matches goes under `heading` of `note`
    instead of the day's capture note (the first rule that matches wins)."""

    match: str
    """`tag:NAME`: an entry with that tag; anything else: a regular expression (Python's)
    found in the entry's text (`(?i)` for any case)."""
    note: str
    """The note (a path relative to the vault, .md or .org; it must exist) the entry goes
    into."""
    heading: str = "Remembered"
    """The heading of `note` the entry goes under (at the end of its section, a level
    below it); made at the end of the note when missing."""


class Capture(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    folder: str = ""
    """The folder (relative to the vault) of the capture notes `remember` appends to;
    empty: `remember` is off and refused."""
    format: str = "md"
    """md or org: the format of the daily capture note it creates."""
    host: str = ""
    """The one machine whose vaultd writes into this vault, as `[split] host` (either names
    it; both set, they must agree: every write goes through one journal in the vault)."""
    route: list[Route] = []
    """`[[capture.route]]` rules, tried in order; none: every entry goes to the day's
    capture note."""


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    vault: str = ""
    """The vault folder. Required here (or `vaults`), with --vault, or in VAULTD_VAULT."""
    vaults: list[str] = []
    """Several vaults served by one daemon, instead of `vault`: one index, state folder and
    watcher each, one socket (the first vault's). After `load()`: every vault served."""
    state_dir: str = ""
    """Index and state; default $XDG_STATE_HOME/vaultd/<vault-name>/ (with `vaults`: a
    folder given here holds one <vault-name>/ per vault)."""
    socket: str = ""
    """Default $XDG_RUNTIME_DIR/vaultd/<vault-name>.sock (of the first vault)."""
    log_level: str = "info"
    watch: Watch = msgspec.field(default_factory=Watch)
    index: Index = msgspec.field(default_factory=Index)
    search: Search = msgspec.field(default_factory=Search)
    tiers: Tiers = msgspec.field(default_factory=Tiers)
    split: Split = msgspec.field(default_factory=Split)
    capture: Capture = msgspec.field(default_factory=Capture)
    context: Context = msgspec.field(default_factory=Context)
    semantic: Semantic = msgspec.field(default_factory=Semantic)

    @classmethod
    def from_file(cls, path: str | os.PathLike | None) -> "Config":
        """Decode a TOML file (or return defaults when `path` is None)."""
        if path is None:
            return cls()
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read config: {e.strerror}", str(path)) from None
        try:
            cfg = msgspec.toml.decode(data, type=cls)
        except msgspec.ValidationError as e:
            raise ConfigError(explain_validation(str(e)), str(path)) from None
        except msgspec.DecodeError as e:
            raise ConfigError(f"not valid TOML: {e}", str(path)) from None
        # a relative path in the file is relative to the file, wherever vaultd runs (a
        # systemd unit runs in $HOME; install-service writes the paths it will open)
        base = Path(path).absolute().parent

        def at(p: str) -> str:
            return str(base / p) if p and not p.startswith("~") and not os.path.isabs(p) else p

        return msgspec.structs.replace(cfg, vault=at(cfg.vault), vaults=[at(v) for v in cfg.vaults],
                                       state_dir=at(cfg.state_dir), socket=at(cfg.socket))

    def with_overrides(self, split: str | None = None, **flags) -> "Config":
        """Return a copy with command-line flags (those not None) applied; `split` is the
        split mode (over VAULTD_SPLIT, over the file)."""
        top = {k: v for k, v in flags.items() if v is not None}
        if "vault" in top:  # --vault DIR: that one vault, whatever the file's `vaults`
            top["vaults"] = []
        mode = split or _default_split_mode()
        if mode:
            top["split"] = msgspec.structs.replace(self.split, mode=mode)
        return msgspec.structs.replace(self, **top) if top else self

    def load(self) -> "Config":
        """Fill in derived paths and check every value; raises ConfigError. With `vaults`:
        the config of `vault` when it is one of them, else of the first (see load_all)."""
        every = self.load_all()
        here = str(Path(self.vault).expanduser().resolve()) if self.vault else ""
        return next((c for c in every if c.vault == here), every[0])

    def load_all(self, missing_ok: bool = False) -> "list[Config]":
        """One loaded config per vault (`vaults`, else the one `vault`), each with its own
        `vault`, `state_dir` and `capture`, and all of them with every vault in `vaults` and
        the one socket (the first vault's). Raises ConfigError. `missing_ok`: of several
        vaults, those whose folder is not there (an unmounted disk) are loaded too, as long
        as one is there (`run` serves each once its folder appears)."""
        self._check_paths()
        given = self.vaults or [self.vault or _default_vault()]
        if self.vault and self.vaults and str(Path(self.vault).expanduser().resolve()) not in \
                [str(Path(v).expanduser().resolve()) for v in self.vaults]:
            raise ConfigError("`vault` and `vaults` are both set: keep one (`vaults` lists every vault served)")
        if not given[0]:
            raise ConfigError("no vault given: pass --vault DIR, set `vault` (or `vaults`) in the config, or VAULTD_VAULT")
        vaults = []
        for v in given:
            vault = Path(v).expanduser().resolve()
            if not vault.is_dir() and not (missing_ok and len(given) > 1 and not vault.exists()):
                raise ConfigError(f"vault {vault} is not a folder")
            for other in vaults:
                if vault == other:
                    raise ConfigError(f"vaults: {vault} is listed twice")
                if other in vault.parents or vault in other.parents:
                    raise ConfigError(f"vaults: {min(vault, other, key=lambda p: len(p.parts))} holds "
                                      f"{max(vault, other, key=lambda p: len(p.parts))}: a vault inside another "
                                      "would be indexed twice")
            vaults.append(vault)
        if not any(v.is_dir() for v in vaults):
            raise ConfigError(f"no vault is there: {', '.join(map(str, vaults))} are not folders")
        self._check()
        sock = Path(self.socket or _default_socket() or runtime_dir() / f"{vault_name(vaults[0])}.sock")
        sock = sock.expanduser().absolute()
        if len(os.fsencode(sock)) > MAX_SOCKET_PATH:
            raise ConfigError(
                f"socket path {sock} is {len(os.fsencode(sock))} bytes; a Unix socket path "
                f"must be at most {MAX_SOCKET_PATH}: choose a shorter one with --socket"
            )
        state_given = self.state_dir or _default_state_dir()
        loaded = []
        for vault in vaults:
            name = vault_name(vault)
            if not state_given:
                state = xdg_dir("XDG_STATE_HOME", ".local/state") / "vaultd" / name
            else:
                state = Path(state_given) / name if len(vaults) > 1 else Path(state_given)
            state = state.expanduser().resolve()
            if state == vault or vault in state.parents:
                raise ConfigError(f"state_dir {state} is inside the vault; vaultd never writes there")
            capture = _check_capture(self.capture, self.watch.extensions, self.watch.ignore_dirs, vault)
            loaded.append(msgspec.structs.replace(
                self, vault=str(vault), vaults=[str(v) for v in vaults], state_dir=str(state), socket=str(sock),
                log_level=self.log_level.lower(), capture=capture))
        return loaded

    def writes_elsewhere(self) -> str | None:
        """None when this machine may write into the vault (no `host` set, or this one);
        else why not, in words: "this vault writes only on host X; this is Y". The host
        name is read each time (see _default_hostname)."""
        want = self.split.host or self.capture.host
        if not want:
            return None
        here = _default_hostname()
        return None if same_host(want, here) else f"this vault writes only on host {want}; this is {here}"

    def _check_paths(self) -> None:
        """Every path, folder name and glob of the config holds only what a path can hold (a
        NUL cannot be in one: the OS would refuse it, and Python raise); raises ConfigError
        naming the key. Run before any path is looked at."""
        for key, val in (("vault", self.vault), ("state_dir", self.state_dir), ("socket", self.socket),
                         ("capture.folder", self.capture.folder),
                         *((f"vaults[{i}]", v) for i, v in enumerate(self.vaults)),
                         *(("watch.extensions", v) for v in self.watch.extensions),
                         *(("watch.ignore_dirs", v) for v in self.watch.ignore_dirs),
                         *(("split.exclude", v) for v in self.split.exclude),
                         *(("tiers.cold", v) for v in self.tiers.cold)):
            if "\0" in val:
                raise ConfigError(f"{key}: {val!r} holds a NUL character (\\0), which no path can hold")

    def _check(self) -> None:
        """Every value that is not a path checked; raises ConfigError."""
        if self.log_level.lower() not in LOG_LEVELS:
            raise ConfigError(f"log_level: expected one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")
        w, i = self.watch, self.index
        for key, val, lo in (
            ("watch.debounce_ms", w.debounce_ms, 0),
            ("watch.max_delay_ms", w.max_delay_ms, 1),
            ("index.heap_mb", i.heap_mb, 15),
            ("index.max_file_mb", i.max_file_mb, 1),
            ("index.workers", i.workers, 0),
            ("search.limit", self.search.limit, 1),
            ("search.candidates", self.search.candidates, 1),
            ("tiers.hot_max", self.tiers.hot_max, 1),
            ("tiers.min_results", self.tiers.min_results, 0),
        ):
            if val < lo:
                raise ConfigError(f"{key}: expected an integer >= {lo}, got {val}")
        for key, host in (("split.host", self.split.host), ("capture.host", self.capture.host)):
            if host and not _HOST_NAME.fullmatch(host):
                raise ConfigError(f"{key}: expected a host name as `hostname` prints it, got {host!r}")
        if self.split.host and self.capture.host and not same_host(self.split.host, self.capture.host):
            raise ConfigError(f"split.host ({self.split.host}) and capture.host ({self.capture.host}) name different "
                              "machines: every write into the vault goes through one journal in it, so one machine "
                              "makes them all; set one of them")
        if self.search.conflict_copies not in CONFLICT_MODES:
            raise ConfigError(f"search.conflict_copies: expected collapse, below or hide, "
                              f"got {self.search.conflict_copies!r}")
        if self.split.mode not in SPLIT_MODES:
            raise ConfigError(f"split.mode (or --split, VAULTD_SPLIT): expected auto, propose or off, "
                              f"got {self.split.mode!r}")
        if not w.rescan_s >= 0:
            raise ConfigError(f"watch.rescan_s: expected seconds >= 0 (0 = never), got {w.rescan_s}")
        if not w.fallback_rescan_s > 0:
            raise ConfigError(f"watch.fallback_rescan_s: expected seconds > 0, got {w.fallback_rescan_s}")
        if not self.split.quiet >= 0:
            raise ConfigError(f"split.quiet: expected seconds >= 0, got {self.split.quiet}")
        if not 0 <= self.search.coverage_weight <= 1:
            raise ConfigError(f"search.coverage_weight: expected a number from 0 to 1, got {self.search.coverage_weight}")
        for key in ("weight", "matched_weight", "cjk_weight"):
            if not 0 <= (val := getattr(self.semantic, key)) <= 1:
                raise ConfigError(f"semantic.{key}: expected a number from 0 to 1, got {val}")
        if self.semantic.scan < 0:
            raise ConfigError(f"semantic.scan: expected an integer >= 0, got {self.semantic.scan}")
        if self.split.threshold < 1024:
            raise ConfigError(f"split.threshold: expected at least 1024 bytes, got {self.split.threshold}")
        for ext in w.extensions:
            if not ext.startswith("."):
                raise ConfigError(f"watch.extensions: expected names like '.md', got {ext!r}")



def _check_capture(c: Capture, extensions: list[str], ignore_dirs: list[str], vault: Path) -> Capture:
    """`[capture]` checked: a folder inside the vault that is indexed (not hidden, not
    ignored, not the journal's), and a format that is watched; the folder written as the
    vault path it really is (see real_capture_folder). Raises ConfigError."""
    if c.format not in CAPTURE_FORMATS:
        raise ConfigError(f"capture.format: expected md or org, got {c.format!r}")
    for i, r in enumerate(c.route, 1):
        _check_route(i, r, extensions, ignore_dirs)
    if not c.folder:
        return c
    if f".{c.format}" not in extensions:
        raise ConfigError(f"capture.format: {c.format!r} notes are not indexed (watch.extensions)")
    parts = c.folder.replace("\\", "/").strip("/").split("/")
    why = "is absolute: name a folder relative to the vault" if c.folder.startswith("/") else \
        _capture_problem(parts, ignore_dirs)
    if why:
        raise ConfigError(f"capture.folder {c.folder!r} {why}")
    return msgspec.structs.replace(c, folder=real_capture_folder(vault, "/".join(parts), ignore_dirs))


def _check_route(i: int, r: Route, extensions: list[str], ignore_dirs: list[str]) -> None:
    """A `[[capture.route]]` rule checked: a tag or a regular expression that compiles, a
    note inside the vault that is indexed, a heading of one line. Raises ConfigError."""
    where = f"capture.route #{i}"
    if r.match.startswith("tag:"):
        if not re.fullmatch(r"\w*[^\W\d_]\w*", r.match[4:]):
            raise ConfigError(f"{where}: match {r.match!r}: a tag is one word of letters, digits and _")
    else:
        try:
            re.compile(r.match)
        except re.error as e:
            raise ConfigError(f"{where}: match {r.match!r} is not a regular expression: {e}") from None
    parts = r.note.replace("\\", "/").split("/")
    why = "is absolute: name a note relative to the vault" if r.note.startswith("/") else \
        "is not a plain path (no ./, // or backslash)" if os.path.normpath(r.note) != r.note or "\\" in r.note else \
        _capture_problem(parts[:-1] or ["ok"], ignore_dirs) or (
            "is hidden" if parts[-1].startswith(".") else None) or (
            None if os.path.splitext(r.note)[1] in (".md", ".org") and os.path.splitext(r.note)[1] in extensions
            else "is not a note vaultd indexes (.md or .org, in watch.extensions)")
    if why:
        raise ConfigError(f"{where}: note {r.note!r} {why}")
    if not r.heading.strip() or "\n" in r.heading:
        raise ConfigError(f"{where}: heading {r.heading!r}: expected the text of one heading")


def _capture_problem(parts: list[str], ignore_dirs: list[str]) -> str | None:
    """Why a capture folder of these parts (a vault path) is not one, or None."""
    return ("leads out of the vault (..)" if ".." in parts
            else "is the vault itself: name a folder inside it, e.g. \"inbox\"" if parts in ([""], ["."])
            else "is hidden (a name starting with \".\", like vaultd's journal .vaultd/): it would not be indexed"
            if any(p.startswith(".") for p in parts)
            else "is in watch.ignore_dirs: it would not be indexed" if any(p in ignore_dirs for p in parts)
            else "has an empty part (//)" if "" in parts else None)


def real_capture_folder(vault: Path | str, folder: str, ignore_dirs: list[str]) -> str:
    """The capture folder `folder` as the vault path it really is, symlinks resolved (as far
    as it exists), checked as the folder itself is: inside the vault, not hidden (the
    journal's .vaultd/, .git/), not ignored, a folder when it exists. At config load, in
    `vaultd check` and at every `remember` (a symlink may be made any time). Raises ConfigError."""
    root = os.path.realpath(vault)
    real = os.path.realpath(os.path.join(root, folder))
    if real != root and not real.startswith(root + os.sep):
        raise ConfigError(f"capture.folder {folder!r} leads out of the vault (through a symlink, to {real})")
    rel = os.path.relpath(real, root).replace(os.sep, "/")
    if rel != folder and (why := _capture_problem(rel.split("/"), ignore_dirs)):
        raise ConfigError(f"capture.folder {folder!r} is {rel!r} through a symlink, which {why}")
    if os.path.lexists(real) and not os.path.isdir(real):
        raise ConfigError(f"capture.folder {folder!r} is a file, not a folder: move it away, or name another folder")
    return rel


_HOST_NAME = re.compile(r"[^\s/\x00-\x1f\x7f]{1,255}")
"""What a host name may be here: no space, slash or control character (Linux allows more
than DNS does; `hostname` prints what the kernel holds)."""


def same_host(a: str, b: str) -> bool:
    """Whether host names `a` and `b` name one machine: equal but for case, or one is the
    other's first label (`laptop` and `laptop.lan`)."""
    a, b = a.casefold().rstrip("."), b.casefold().rstrip(".")
    return a == b or (("." not in a or "." not in b) and a.split(".")[0] == b.split(".")[0])


def _default_hostname() -> str:
    """This machine's name as `host` keys are compared with: VAULTD_HOSTNAME when set (a
    container whose host name changes at each start; the tests), else socket.gethostname()."""
    return os.environ.get("VAULTD_HOSTNAME") or so.gethostname()


def _default_vault() -> str:
    return os.environ.get("VAULTD_VAULT", "")


def _default_state_dir() -> str:
    return os.environ.get("VAULTD_STATE_DIR", "")


def _default_split_mode() -> str:
    return os.environ.get("VAULTD_SPLIT", "")


def _default_socket() -> str:
    return os.environ.get("VAULTD_SOCKET", "")


def default_config_path() -> Path | None:
    """VAULTD_CONFIG, else $XDG_CONFIG_HOME/vaultd/config.toml when it exists."""
    env = os.environ.get("VAULTD_CONFIG")
    if env:
        return Path(env)
    p = xdg_dir("XDG_CONFIG_HOME", ".config") / "vaultd" / "config.toml"
    return p if p.is_file() else None
