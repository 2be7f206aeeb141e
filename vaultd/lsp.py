"""`vaultd lsp`: a Language Server (pygls) over the running daemon, for Markdown and Org buffers.

A face like vaultq and the MCP server: what the vault knows comes from the daemon's
operations, asked over its socket (found as vaultq finds it, from the buffer's folder: the
daemon of the vault around the file). What the buffer says comes from the buffer itself: its
current text, saved or not, is read by vaultd's own parser (vaultd/parse, pure), so every link
syntax vaultd reads is a link here, at the line and column vaultd gives it, and only where
it leads is asked of the daemon.

- definition: the note (and heading or block line) the link under the cursor leads to; every
  candidate of an ambiguous one.
- references: the backlinks of the note, or of the heading under the cursor, or of the place
  the link under the cursor leads to.
- completion: link targets after `[[` (titles, aliases, Denote identifiers, and in Org
  `denote:`/`file:` links), headings after `[[Note#` and `::*`, blocks after `#^`; in a
  Markdown link's target `[text](`, note paths relative to the note, then `#headings`;
  tags after `#` (Markdown) and in Org tag lists.
- diagnostics: broken and ambiguous links (with the candidates), as the buffer stands; a
  Denote identifier keyword that disagrees with the file name (the file name's names the
  note, as Denote follows it).
- rename (with prepareRename): on a link, the note it leads to; on a note's title (its
  title keyword, or a Markdown note's first H1) the note; on a heading, the heading: done
  by the daemon's `rename` op, journaled and undoable (`vaultq undo OP`); the editor's open
  buffers are brought to the files written. workspace/willRenameFiles: a note's file
  renamed by the editor gets the links to it rewritten (edits the editor applies).
- code actions: `Create note NAME` on a broken link (the editor makes it, in the vault's
  naming convention); a disagreeing Denote identifier keyword set to the file name's;
  `Link "Title"` on a plain mention of a note's title or alias (the daemon's `mentions`),
  made a link in the buffer's own syntax.
- hover: the target's title, tags and first lines; document symbols: the buffer's
  headings; workspace symbols: a search.

Positions are in the encoding the client and server agreed on (UTF-16 unless the client
offers another), converted from vaultd's character columns line by line, in time bounded
however long the line (see STEP). When the daemon is down every request answers nothing,
the buffer's diagnostics are cleared (they were of a text that may be gone), and the client
is told once, in words that say how to start it, until it answers again; while it builds
its first index, once that its answers hold only the notes read so far. A buffer outside
the vault (an editor may attach the server to every Markdown buffer) gets no answer and no
diagnostics, and no error is shown for it.

What it reads: the buffers the editor sent, and the vault's notes, as the daemon reads them
(paths.read_head: a regular file inside the vault, not through a symlink, within the size
cap `[index] max_file_mb`). A document the client has not opened is read from disk when it
is such a note; when nothing is there it gets no answer (null); anything else (outside the
vault, a symlink, a FIFO, a device, a folder, a file over the cap) gets an error reply
(NotANote) and is never read. A buffer over the cap is not parsed: it gets one diagnostic
that says so, and its requests answer nothing.

Where the work is done: messages are read and replies written in one thread (the event
loop); each request is answered in a request worker, and each open document's links are
checked in a check worker, so that a huge buffer holds up no other document. A check is
dropped when a newer version of its document arrives (it is never published), and a
request the client cancels ($/cancelRequest) is answered as cancelled at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import threading
import time
from bisect import bisect_right
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path

from . import __version__, client
from .client import RequestFailed, Session
from .errors import DaemonUnavailable
from .note import Heading, Link, headings_of
from .parse import parse_lines
from .paths import pick_socket, read_head
from .parse.denote import IDENTIFIER, TEXT_SUFFIX, denote_slug, mismatch, parse_name
from .parse.links import extract
from .parse.syntaxes import DENOTE, INTERNAL, MARKDOWN_LINK, MARKDOWN_OR_WIKI, NO_IDENTIFIER, NO_NOTE, NOT_NOTES, \
    ORG_FILE, TYPED, WIKI, WITHIN_SOURCE
from .render import still_indexing

logger = logging.getLogger("vaultd.lsp")

NOTE_SUFFIXES = (".md", ".org")
NOTE_FILES = ("md", "org", "txt")
"""The extensions of the files whose renames by the editor are asked of the server (workspace/willRenameFiles)."""
DEBOUNCE_S = 0.3
"""Quiet time after a change before the buffer's links are checked again."""
FIRST_LINES = 8
"""Lines of a note a hover shows, from its heading or block (or its top)."""
COMPLETIONS = 200
"""Link targets offered at most for one completion (the client filters as you type)."""


# -- the daemon --------------------------------------------------------------------------


def daemon(socket: str | None = None, vault: str | None = None) -> client.Daemon:
    """The running vaultd, asked over a fresh session each time (it may be restarted between
    requests): the one given (--socket, --vault), else the one of the vault around the file
    or folder asked from (client.Daemon.session's `near`). Paths come back absolute."""
    return client.Daemon(lambda folder: pick_socket(socket, vault, cwd=folder), timeout=10.0, paths="absolute")


# -- the buffer: its text through vaultd's own parser ------------------------------------


class Buffer:
    """An open document as vaultd reads it: the Note its current text parses to (links,
    headings, blocks, tags with their lines and character columns) and its lines."""

    def __init__(self, path: str, text: str, vault: str | None):
        self.path = path
        self.vault = vault
        self.rel = os.path.relpath(path, vault) if vault and _inside(path, vault) else os.path.basename(path)
        self.org = path.lower().endswith(".org")
        self.note, _ = parse_lines(self.rel, text.encode("utf-8", "surrogatepass"))
        self.lines = text.split("\n")
        self.bom = text.startswith("\ufeff")  # the parser drops it: line 1's columns are one more here

    @property
    def links(self) -> list[Link]:
        return self.note.links

    @property
    def headings(self) -> list[Heading]:
        return headings_of(self.note)

    def col0(self, link: Link) -> int:
        """The link's 0-based character column in this buffer's line."""
        return link.col - 1 + (1 if self.bom and link.line == 1 else 0)

    def span(self, link: Link) -> tuple[int, int, int, int]:
        """(line, char, end line, end char), 0-based characters, of the link's text."""
        first, *rest = link.raw.split("\n")
        start = self.col0(link)
        if rest:  # an Org description that goes on in the next line
            return link.line - 1, start, link.line, len(rest[-1])
        return link.line - 1, start, link.line - 1, start + len(first)

    def link_at(self, line: int, char: int) -> Link | None:
        """The link under 0-based (line, character), end exclusive: the character just past
        it is not on it (the rule of every face, and of the daemon's `resolve` with `col`)."""
        for ln in self.links:
            a, b, c, d = self.span(ln)
            if (a, b) <= (line, char) < (c, d):
                return ln
        return None

    def local(self, link: Link):
        """Where a link within this buffer (`[[#Heading]]`, `[[*Heading]]`) leads, read from
        the buffer's own headings and blocks (the unit of links within a note)."""
        return INTERNAL.within(self.note, link)


ELSEWHERE_S = 10.0
"""Seconds a folder no running daemon serves is taken to be of no vault before it is asked again."""


def _inside(path: str, root: str) -> bool:
    return os.path.realpath(path).startswith(os.path.join(os.path.realpath(root), ""))


# -- what the server reads: the vault's notes, the editor's buffers ---------------------


class NotANote(JsonRpcException):
    """The error reply to a request about a document never opened that is not a note of the
    vault (outside it, a symlink, a FIFO, a device, a folder, over the size cap): nothing of
    it was read. RequestFailed: the request was understood, and refused."""

    CODE = int(t.LSPErrorCodes.RequestFailed)
    MESSAGE = "not a note of the vault"


def size_cap() -> int:
    """The daemon's size cap in bytes: `[index] max_file_mb` of the config file vaultd reads
    by default (VAULTD_CONFIG, else the user's), else the default."""
    from .config import Config, Index, default_config_path
    from .errors import ConfigError

    try:
        return Config.from_file(default_config_path()).index.max_file_mb << 20
    except ConfigError as e:
        logger.warning("%s; the size cap is the default", e)
        return Index().max_file_mb << 20


def over_cap(cap: int) -> str:
    return f"over the size cap (index.max_file_mb = {cap >> 20})"


def megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


def vault_rel(path: str, vault: str) -> str | None:
    """`path` relative to the vault, its folders resolved (a folder that is a symlink out of
    the vault leads out of it) and its last part as it is; None when outside the vault."""
    here = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    rel = os.path.relpath(here, os.path.realpath(vault))
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def note_text(path: str, vault: str, cap: int) -> str | None:
    """The text of the vault's note at `path` as the daemon reads it (paths.read_head, then
    decoded as vaultd decodes), or None when nothing is there. Anything else is refused with
    NotANote before a byte of it is read: a path outside the vault, a symlink, a FIFO, a
    device, a folder (looked at with lstat, then opened without blocking and checked again
    by open_note), a file over the size cap `cap`."""
    from .parse import decode

    rel = vault_rel(path, vault)
    if rel is None:
        raise NotANote(f"{path} is outside the vault {vault}: the LSP reads only the vault's notes")
    full = os.path.join(os.path.realpath(vault), rel)
    try:
        st = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise NotANote(f"{path} cannot be read: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise NotANote(f"{path} is a symlink: vaultd reads no symlink as a note")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
        raise NotANote(f"{path} is not a regular file ({kind}): vaultd reads only files as notes")
    if st.st_size > cap:
        raise NotANote(f"{path} is {megabytes(st.st_size)}, {over_cap(cap)}")
    try:
        data, size = read_head(os.path.realpath(vault), rel, cap)
    except FileNotFoundError:
        return None
    except OSError as e:  # swapped for something else since lstat
        raise NotANote(f"{path} cannot be read as a note: {e.strerror}") from None
    if size > cap:
        raise NotANote(f"{path} is {megabytes(size)}, {over_cap(cap)}")
    return decode(data)[0]


def buffer_size(text: str, cap: int) -> int | None:
    """A buffer's size in UTF-8 bytes when it is over `cap`, else None. Its length alone
    says when it can (then that is the size given: a bound from below, exact for ASCII);
    only a text between cap/4 and cap characters long is encoded to count its bytes."""
    if 4 * len(text) <= cap:
        return None
    size = len(text) if len(text) > cap else len(text.encode("utf-8", "surrogatepass"))
    return size if size > cap else None


def too_big(size: int, cap: int) -> t.Diagnostic:
    """The one diagnostic of a buffer over the size cap, on its first line."""
    start = t.Position(line=0, character=0)
    return t.Diagnostic(range=t.Range(start=start, end=start), severity=t.DiagnosticSeverity.Warning,
                        source="vaultd", code="too-big",
                        message=f"this buffer is {megabytes(size)}, {over_cap(cap)}: vaultd does not read it for "
                                "links (no diagnostics, definitions, hovers or completions in it)")


# -- work off the event loop, dropped when no longer wanted -------------------------------


class Dropped(Exception):
    """Work given up: its request was cancelled ($/cancelRequest), or a newer version of its
    document arrived (or the document was closed)."""


_running = threading.local()


class Job:
    """One piece of work done in a worker thread; `cancel()` makes its next checkpoint()
    raise Dropped (a daemon request under way is let finish, and its answer dropped), as
    does the server's `closing` once set."""

    def __init__(self, closing: threading.Event) -> None:
        self.cancelled = threading.Event()
        self.closing = closing

    def run(self, fn, *args):
        _running.job = self
        try:
            self.checkpoint()
            return fn(*args)
        finally:
            _running.job = None

    def cancel(self) -> None:
        self.cancelled.set()

    def checkpoint(self) -> None:
        if self.cancelled.is_set() or self.closing.is_set():
            raise Dropped


def checkpoint() -> None:
    """Raise Dropped when the work running in this thread is no longer wanted."""
    job = getattr(_running, "job", None)
    if job is not None:
        job.checkpoint()


# -- where links lead, asked of the daemon ----------------------------------------------


class Dest(dict):
    """Where a link leads, as the daemon says it: `path` (absolute) and `line` (of the heading or
    block, else None), or `broken` (why) with `candidates` (absolute paths) when ambiguous."""

    path = property(lambda self: self.get("path"))
    line = property(lambda self: self.get("line"))
    broken = property(lambda self: self.get("broken"))
    candidates = property(lambda self: self.get("candidates") or [])


def resolve_all(session: Session, buf: Buffer) -> list[Dest | None]:
    """Where each of the buffer's links leads (None: a URL or an attachment), each asked of
    the daemon as written in the buffer's file (`resolve`, from its path: a file the vault
    does not hold yet too). Links within the buffer are resolved against its own text. The
    same link written twice is asked once; between two, the work may be dropped (Dropped)."""
    seen: dict[tuple[str, str], Dest | None] = {}
    out = []
    for ln in buf.links:
        key = (ln.kind, ln.raw)
        if key not in seen:
            checkpoint()
            seen[key] = resolve_link(session, buf, ln)
        out.append(seen[key])
    return out


def resolve_link(session: Session, buf: Buffer, ln: Link) -> Dest | None:
    if ln.kind in NOT_NOTES:
        return None
    if ln.kind in WITHIN_SOURCE:
        d = buf.local(ln)
        return Dest(path=buf.path, line=d.line, broken=d.broken, candidates=[])
    r = session.request("resolve", link=ln.raw, **{"from": buf.path})
    if r["path"] is None and r["broken"] is None:
        return None  # an attachment, not a note
    return Dest(path=r["path"], line=r["line"], broken=r["broken"], candidates=r["candidates"])


# -- positions: vaultd's character columns <-> the client's units ------------------------


_CODECS = {t.PositionEncodingKind.Utf8: ("utf-8", 1), t.PositionEncodingKind.Utf32: ("utf-32-le", 4)}
STEP = 4096
"""Characters between two marks of a long line's units (see _marks): a position on a line of
any length costs at most this many characters' conversion."""


def _codec(encoding) -> tuple[str, int]:
    return _CODECS.get(encoding, ("utf-16-le", 2))


def _units(encoding, text: str) -> int:
    if encoding == t.PositionEncodingKind.Utf32:
        return len(text)
    name, width = _codec(encoding)
    if text.isascii():
        return len(text)
    return len(text.encode(name, "surrogatepass")) // width


@lru_cache(maxsize=32)
def _marks(encoding, line: str) -> tuple[int, ...]:
    """The client's units before every STEP-th character of a long line (a str keeps its hash:
    asking again for the same line is a dictionary look-up)."""
    out, n = [0], 0
    for k in range(0, len(line) - STEP + 1, STEP):
        n += _units(encoding, line[k : k + STEP])
        out.append(n)
    return tuple(out)


def units_of(encoding, line: str, char: int) -> int:
    """The client's column of character index `char` of `line`."""
    char = max(0, min(char, len(line)))
    if len(line) <= STEP:
        return _units(encoding, line[:char])
    k = char // STEP
    return _marks(encoding, line)[k] + _units(encoding, line[k * STEP : char])


def _char_in(encoding, text: str, units: int) -> int:
    """The first character index of `text` at or past client column `units` (inside a
    character: past it)."""
    if units <= 0:
        return 0
    if encoding == t.PositionEncodingKind.Utf32 or text.isascii():
        return min(units, len(text))
    name, width = _codec(encoding)
    head = text[:units].encode(name, "surrogatepass")[: units * width]  # a character is at least one unit
    try:
        got = head.decode(name, "surrogatepass")
    except UnicodeDecodeError as e:  # cut inside a character: past it
        return len(head[: e.start].decode(name, "surrogatepass")) + 1
    return len(got)


def to_char(encoding, line: str, units: int) -> int:
    """The character index in `line` of a client column `units` (past the end: the end), in
    time bounded by STEP however long the line."""
    if len(line) <= STEP:
        return _char_in(encoding, line, units)
    marks = _marks(encoding, line)
    k = max(0, bisect_right(marks, units) - 1)
    return k * STEP + _char_in(encoding, line[k * STEP : (k + 1) * STEP], units - marks[k])


def position(encoding, lines: list[str], line: int, char: int) -> t.Position:
    text = lines[line] if 0 <= line < len(lines) else ""
    return t.Position(line=line, character=units_of(encoding, text, char))


def _range(encoding, lines: list[str], a: int, b: int, c: int, d: int) -> t.Range:
    return t.Range(start=position(encoding, lines, a, b), end=position(encoding, lines, c, d))


def _at_line(line: int | None) -> t.Range:
    p = t.Position(line=max(0, (line or 1) - 1), character=0)
    return t.Range(start=p, end=p)


# -- the server --------------------------------------------------------------------------


_ANSWERED = object()
"""What _Protocol.structure_message gives for a request it answered with an error itself."""


class _Protocol(LanguageServerProtocol):
    """pygls's, but a request whose params do not fit their type (a negative line, a string
    for a number) gets its error reply: pygls only shows a message, and the editor waits
    for the reply forever."""

    def structure_message(self, data: dict):
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if "method" not in data or "id" not in data:  # a notification: no reply is owed
                raise
            self._send_response(data["id"], error=e.to_response_error())
            return _ANSWERED

    def handle_message(self, message) -> None:
        if message is not _ANSWERED:
            super().handle_message(message)


WORKERS = 4
"""Threads answering requests, and as many checking open documents' links: a request or a
check waits on the daemon or parses a big buffer there, never in the thread that reads
the client's messages and writes the replies."""


class VaultServer(LanguageServer):
    """The server: messages are read and replies written in one thread (pygls's event loop);
    requests are answered in worker threads (`answer`), and each open document's links
    checked in others (`check_soon`), so that no document waits on another's work."""

    def __init__(self, daemon: client.Daemon):
        super().__init__("vaultd", __version__, text_document_sync_kind=t.TextDocumentSyncKind.Full,
                         protocol_cls=_Protocol)
        self.daemon = daemon
        self.cap = size_cap()
        self._docs: dict[str, tuple[int | None, str]] = {}  # open document (unquoted URI) -> (version, text)
        self._buffers: dict[str, tuple[int | None, Buffer]] = {}
        self._parsing: dict[str, threading.Lock] = {}
        self._vaults: dict[str, str | None] = {}  # folder -> the vault its daemon serves
        self._several = False  # the daemon serves several vaults: each request names the one asked of
        self._down_said = False
        self._building_said = False  # the first index is being built: said once (see building)
        self._said = threading.Lock()
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._checks: dict[str, Job] = {}  # open document -> the check of its latest version
        self._elsewhere: dict[str, float] = {}  # folder -> until when it is known to be of no vault
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closing = threading.Event()  # set at shutdown: every job still running is dropped
        self._requests = ThreadPoolExecutor(WORKERS, thread_name_prefix="vaultd-lsp-request")
        self._checking = ThreadPoolExecutor(WORKERS, thread_name_prefix="vaultd-lsp-check")

    # -- work off the event loop

    async def answer(self, fn, params):
        """`fn(self, params)` worked out in a request worker; when the client cancels the
        request ($/cancelRequest), its reply (Request Cancelled) goes at once and the work is
        dropped at its next checkpoint."""
        self._loop = asyncio.get_running_loop()
        job = Job(self.closing)
        try:
            return await self._loop.run_in_executor(self._requests, job.run, fn, self, params)
        except asyncio.CancelledError:
            job.cancel()
            raise

    def stop_work(self) -> None:
        """Drop every check and request under way (at shutdown, or when the client is gone),
        so that the process need not wait for them to end."""
        self.closing.set()
        for pool in (self._requests, self._checking):
            pool.shutdown(wait=False, cancel_futures=True)

    def on_loop(self, fn, *args) -> None:
        """Call `fn(*args)` in the event loop's thread, soon (messages to the client are
        written from there only, in the order they are made)."""
        if self._loop is None:  # before the first message: nothing runs elsewhere yet
            fn(*args)
            return
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: the client is gone
            pass

    def say(self, kind: t.MessageType, message: str) -> None:
        self.on_loop(self.window_show_message, t.ShowMessageParams(type=kind, message=message))

    # -- open documents and their checks (in the event loop's thread)

    def opened(self, uri: str) -> None:
        """Keep the text the client sent for `uri` with its version (as one pair: a worker
        reading it while a change comes gets one version's text and number, never a mix)."""
        self._loop = asyncio.get_running_loop()
        doc = self.workspace.get_text_document(uri)
        self._docs[unquote(uri)] = (doc.version, doc.source)

    def closed(self, uri: str) -> None:
        self._docs.pop(unquote(uri), None)
        self._buffers.pop(uri, None)
        self._parsing.pop(uri, None)
        self._drop_check(uri)
        self.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def _drop_check(self, uri: str) -> None:
        old = self._pending.pop(uri, None)
        if old:
            old.cancel()
        job = self._checks.pop(uri, None)
        if job:
            job.cancel()

    def check_soon(self, uri: str, delay: float) -> None:
        """Check the document's links once it has been quiet for `delay` seconds, in a check
        worker; the check of an older version is dropped at once (never published)."""
        self._drop_check(uri)
        self._pending[uri] = asyncio.get_running_loop().call_later(delay, self._start_check, uri)

    def _start_check(self, uri: str) -> None:
        self._pending.pop(uri, None)
        doc = self._docs.get(unquote(uri))
        if doc is None or self.closing.is_set():
            return
        job = self._checks[uri] = Job(self.closing)
        done = self._checking.submit(job.run, self._check, uri, doc, job)
        done.add_done_callback(_log_failure(uri))

    def _check(self, uri: str, doc: tuple[int | None, str], job: Job) -> None:
        out = diagnostics(self, uri, doc)
        self.on_loop(self._publish, uri, doc[0], job, out)

    def _publish(self, uri: str, version: int | None, job: Job, out: list[t.Diagnostic]) -> None:
        if self._checks.get(uri) is job and not job.cancelled.is_set():
            del self._checks[uri]
            self.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, version=version,
                                                                              diagnostics=out))

    # -- talking to the daemon, and saying once when it is down

    @property
    def encoding(self):
        return self.workspace.position_encoding or t.PositionEncodingKind.Utf16

    def down(self, e: Exception) -> None:
        """Tell the user once that the daemon cannot be reached (until it answers again).
        Not when daemons run and none serves the file's folder: a file outside every vault
        (an editor attaches the server to every Markdown buffer) is left alone, silently."""
        if getattr(e, "reason", None) == "several":
            logger.info("%s", e)
            return
        with self._said:
            said, self._down_said = self._down_said, True
        if not said:
            self.say(t.MessageType.Error, f"vaultd: {e}")
        logger.warning("%s", e)

    def up(self) -> None:
        """The daemon answered: said when it was down (and a first index it builds since
        will be said again: see building)."""
        with self._said:
            said, self._down_said = self._down_said, False
            if said:
                self._building_said = False
        if said:
            self.say(t.MessageType.Info, "vaultd: the daemon answers again")

    def failed(self, e: RequestFailed) -> None:
        """The daemon refused a request: logged in errors.CODES' words; shown to the user
        when it waits on the first index (`indexing`), the others being the answer's own
        business (no such note, say)."""
        shown = e.said("LSP")
        if e.code == "indexing":
            self.say(t.MessageType.Info, f"vaultd: {shown}")
        logger.info("%s (%s)", shown, e.code)

    def building(self, answer: dict) -> None:
        """An answer came while the daemon builds its first index (render.still_indexing):
        told to the user once (not at every keystroke's check; again after the daemon was
        down), logged each time."""
        with self._said:
            said, self._building_said = self._building_said, True
        if not said:
            self.say(t.MessageType.Info, f"vaultd: {still_indexing(answer)}")
        logger.info("%s", still_indexing(answer))

    @contextmanager
    def session(self, near: str | None):
        """A daemon session (client.Session) for the file or folder `near`; None when the
        daemon is down (said once to the user) or `near` is a file of no vault. A connection
        lost midway is said too, and raised: the request fails."""
        if near and not os.path.isdir(near) and self.outside(near):
            yield None  # a file of no vault: nothing to say of it, and no error either
            return
        # a daemon that serves several vaults (config `vaults`) is asked of the one holding `near`
        vault = self.vault_of(near) if near and self._several else None
        try:
            s = self.daemon.session(near, vault=vault)
        except DaemonUnavailable as e:
            self.down(e)
            yield None
            return
        self.up()
        with s:
            try:
                yield s
            except DaemonUnavailable as e:
                self.down(e)
                raise

    def asked(self, near: str | None, work, failed=None):
        """What `work(session)` gives, asked of the daemon for the file or folder `near` (see
        session): None when the daemon is down or `near` is a file of no vault; `failed` when
        the daemon refused a request (see failed). A connection lost midway is said, and
        raised. An answer of a first index still being built is said so (see building)."""
        with self.session(near) as s:
            if s is None:
                return None
            try:
                got = work(s)
            except RequestFailed as e:
                self.failed(e)
                return failed
            if s.indexing is not None:
                self.building(s.indexing)
            return got

    def outside(self, path: str) -> bool:
        """Whether the file `path` lies outside every vault: outside the one of the daemon that
        answers for it (the only one running, asked for any folder), or no daemon serves its
        folder while several run (known for ELSEWHERE_S: an editor asks at every keystroke)."""
        folder = os.path.dirname(path)
        if self._elsewhere.get(folder, 0.0) > time.monotonic():
            return True
        vault = self.vault_of(path)
        if vault is None:
            return self._elsewhere.get(folder, 0.0) > time.monotonic()
        return not _inside(path, vault) and os.path.realpath(path) != os.path.realpath(vault)

    def vault_of(self, path: str) -> str | None:
        """The vault the daemon for `path` serves (asked once per folder)."""
        folder = os.path.dirname(path)
        if folder not in self._vaults or self._vaults[folder] is None:
            try:
                pong = self.daemon.ask("ping", near=folder)  # a daemon may serve several: the one holding it
                self._vaults[folder] = next((v for v in pong.get("vaults", ()) if _inside(path, v) or
                                           os.path.realpath(path) == os.path.realpath(v)), pong["vault"])
                self._several = len(pong.get("vaults", ())) > 1
                self.up()
            except DaemonUnavailable as e:
                if e.reason == "several":
                    self._elsewhere[folder] = time.monotonic() + ELSEWHERE_S
                self.down(e)
                return None
            except RequestFailed:
                return None
        return self._vaults[folder]

    # -- buffers

    def buffer(self, uri: str) -> Buffer | None:
        """The document as the client has it open (None when it is over the size cap: see
        diagnostics), else the vault's note on disk (None when nothing is there; NotANote for
        anything that is not a note of the vault). Each version of an open document is
        parsed once, however many requests and checks ask for it at once."""
        path = uri_path(uri)
        if path is None:
            return None
        doc = self._docs.get(unquote(uri))
        if doc is None:
            self._buffers.pop(uri, None)
            return self.note(path)
        return self.parsed(uri, path, doc)

    def parsed(self, uri: str, path: str, doc: tuple[int | None, str]) -> Buffer | None:
        """The buffer of one version of an open document (None when it is over the size cap)."""
        version, text = doc
        if buffer_size(text, self.cap) is not None:
            return None
        with self._parsing.setdefault(uri, threading.Lock()):
            got = self._buffers.get(uri)
            if got and got[0] == version and version is not None:
                return got[1]
            checkpoint()
            buf = Buffer(path, text, self.vault_of(path))
            if self._docs.get(unquote(uri)) is doc:  # still the latest text
                self._buffers[uri] = (version, buf)
            return buf

    def note(self, path: str) -> Buffer | None:
        """The vault's note at `path` as it is on disk (see note_text); None when nothing is
        there or no daemon says which vault it is of."""
        vault = self.vault_of(path)
        if vault is None:
            return None
        text = note_text(path, vault, self.cap)
        return None if text is None else Buffer(path, text, vault)

    def lines_of(self, path: str) -> list[str]:
        """A note's lines: the open buffer's when it is open (unsaved text too), else the
        vault's file's (see note_text); none when it is not a note of the vault."""
        doc = self._docs.get(unquote(from_fs_path(path)))
        if doc is not None:
            return doc[1].split("\n") if buffer_size(doc[1], self.cap) is None else []
        vault = self.vault_of(path)
        try:
            text = note_text(path, vault, self.cap) if vault else None
        except NotANote as e:
            logger.info("%s", e)
            return []
        return [] if text is None else text.split("\n")

    def location(self, path: str, line: int | None) -> t.Location:
        return t.Location(uri=from_fs_path(path), range=_at_line(line))

    # -- edits: the editor's buffers and the files on disk

    def refuse(self, why: str) -> Refused:
        """An edit refused: said to the user (an editor may show no error reply) and returned to raise."""
        self.say(t.MessageType.Error, f"vaultd: {why}")
        return Refused(why)

    def disk_text(self, path: str) -> str | None:
        """The text of the file at `path` as a diff of it reads it (undecodable bytes replaced),
        None when there is none (or it is no note of the vault)."""
        vault = self.vault_of(path)
        rel = vault_rel(path, vault) if vault else None
        if rel is None:
            return None
        try:
            data, _ = read_head(os.path.realpath(vault), rel, self.cap)
        except OSError:
            return None
        return data.decode("utf-8", "replace")

    def open_text(self, path: str) -> tuple[int | None, str] | None:
        """The (version, text) of the editor's open buffer of `path`, None when it is not open."""
        return self._docs.get(unquote(from_fs_path(path)))

    def unsaved(self, path: str) -> bool:
        """Whether `path` is open in the editor with a text other than the file's (changes not saved)."""
        doc = self.open_text(path)
        if doc is None:
            return False
        disk = self.disk_text(path)
        return disk is None or norm(doc[1]) != norm(disk)

    def buffers_to_disk(self, paths: list[str]) -> t.WorkspaceEdit | None:
        """Edits bringing every open buffer of these files to the text now on disk (a file
        gone: left alone), versioned when the client takes versions (a buffer changed since is
        then left as it is, by the client)."""
        versioned = self._takes("document_changes")
        docs: list[t.TextDocumentEdit] = []
        changes: dict[str, list[t.TextEdit]] = {}
        for p in paths:
            doc, disk = self.open_text(p), self.disk_text(p)
            if doc is None or disk is None or not (edits := line_edits(self, doc[1], disk)):
                continue
            uri = from_fs_path(p)
            if versioned:
                docs.append(t.TextDocumentEdit(
                    text_document=t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc[0]), edits=edits))
            else:
                changes[uri] = edits
        if not docs and not changes:
            return None
        return t.WorkspaceEdit(document_changes=docs) if versioned else t.WorkspaceEdit(changes=changes)

    def _takes(self, what: str) -> bool:
        ws = getattr(self.client_capabilities, "workspace", None)
        we = getattr(ws, "workspace_edit", None)
        return bool(getattr(we, what, None))

    def moved_buffer(self, note: str, to: str) -> bool:
        """Whether the renamed note `note` (now `to`) is open in the editor: then the editor
        is asked to show `to` (window/showDocument, when it can)."""
        if note == to or self.open_text(note) is None:
            return False
        window = getattr(self.client_capabilities, "window", None)
        if getattr(getattr(window, "show_document", None), "support", False):
            self.on_loop(self.window_show_document, t.ShowDocumentParams(uri=from_fs_path(to), take_focus=True),
                         None)
        return True

    def file_renamed(self, old: str, new: str) -> dict[str, list[t.TextEdit]] | None:
        """The edits that keep every link to the note `old` leading to it once the editor names
        it `new` (see will_rename_files), by document URI (the note's own at `old`); None, and
        the user told why, when vaultd's rename cannot name it so or refuses."""
        vault = self.vault_of(old)
        if vault is None or not _inside(old, vault):
            return None
        title = _file_title(old, new)
        rel_new = os.path.relpath(new, vault)
        if title is None:
            self.say(t.MessageType.Warning, f"vaultd: links to {os.path.relpath(old, vault)} are not rewritten: "
                                            f"vaultd's rename does not name a note {rel_new} (`vaultq rename` "
                                            "keeps its folder, extension and Denote identifier and keywords)")
            return None
        try:
            plan = ask_rename(self, old, note=old, title=title, line=None, dry_run=True)
        except Refused:
            return None
        if _vault_path(vault, plan["to"]) != new:
            self.say(t.MessageType.Warning, f"vaultd: links are not rewritten: vaultd names the note titled "
                                            f"{title!r} {plan['to']}, not {rel_new}")
            return None
        rel = lambda p: os.path.relpath(_vault_path(vault, p), vault)  # noqa: E731
        rels = {rel(p): _vault_path(vault, p) for p in plan["files"]}
        note, to = rel(plan["note"]), rel(plan["to"])
        unsaved = [p for p, full in rels.items() if self.unsaved(full)]
        if unsaved:
            self.say(t.MessageType.Warning, f"vaultd: links are not rewritten: save {', '.join(unsaved)} first")
            return None
        if plan.get("diff_cut"):
            self.say(t.MessageType.Warning, "vaultd: links are not rewritten: the rename's preview is too big to apply "
                     "here; rename with `vaultq rename` instead")
            return None
        before = {p: text for p, full in rels.items() if (text := self.disk_text(full)) is not None}
        out = {}
        for p, after in diff_texts(plan["diff"], before).items():
            was = before.get(note if p == to else p)
            if after is None or was is None:
                continue
            path = old if p == to else rels[p]
            doc = self.open_text(path)
            if edits := line_edits(self, doc[1] if doc else was, after):
                out[from_fs_path(path)] = edits
        return out


def uri_path(uri: str) -> str | None:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return unquote(parts.path)


# -- the features ------------------------------------------------------------------------


def _cursor(ls: VaultServer, params) -> tuple[Buffer, int, int] | None:
    """The buffer a position request is about, the line and the character (not LSP units)."""
    buf = ls.buffer(params.text_document.uri)
    if buf is None:
        return None
    line = params.position.line
    return buf, line, to_char(ls.encoding, buf.lines[line] if line < len(buf.lines) else "", params.position.character)


def _followed(ls: VaultServer, params) -> tuple[Buffer, Link, Dest] | None:
    """The link under the cursor (not a URL) and where it leads, with its buffer."""
    if (cur := _cursor(ls, params)) is None:
        return None
    buf, line, char = cur
    link = buf.link_at(line, char)
    if link is None or link.kind in NOT_NOTES:
        return None
    dest = _dest(ls, buf, link)
    return None if dest is None else (buf, link, dest)


def definition(ls: VaultServer, params: t.DefinitionParams):
    if (got := _followed(ls, params)) is None:
        return None
    dest = got[2]
    if dest.candidates:
        return [ls.location(p, None) for p in dest.candidates]
    if dest.path and (dest.line or not dest.broken):
        return ls.location(dest.path, dest.line)
    if dest.path:  # the note is there, the heading or block is not: the note
        return ls.location(dest.path, None)
    return None


def _ask(ls: VaultServer, near: str, op: str, every: str | None = None, **args) -> dict | None:
    """One request to the daemon for the file `near` (with `every`, the name of its paged
    list: all its pages); None when it is down or the request fails (see VaultServer.asked)."""
    return ls.asked(near, lambda s: s.every(op, every, **args) if every else s.request(op, **args))


def _dest(ls: VaultServer, buf: Buffer, link: Link) -> Dest | None:
    """Where the link leads (None: not a note, or the daemon cannot say)."""
    return ls.asked(buf.path, lambda s: resolve_link(s, buf, link))


def references(ls: VaultServer, params: t.ReferenceParams):
    if (cur := _cursor(ls, params)) is None:
        return None
    buf, line, char = cur
    note, at = buf.path, None
    link = buf.link_at(line, char)
    if link is not None and link.kind not in NOT_NOTES:
        dest = _dest(ls, buf, link)
        if not dest or not dest.path:
            return []
        note, at = dest.path, dest.line
    else:
        here = [h for h in buf.headings if h.line == line + 1]
        if here:
            at = here[0].line
    items = ls.asked(note, lambda s: s.every("backlinks", "backlinks", note=note)["backlinks"], failed=[])
    if items is None:
        return None
    if at is not None:
        items = [b for b in items if b.get("resolved_line") == at]
    out, read = [], {}
    for b in items:
        checkpoint()
        if b["path"] not in read:  # each file read once, however many links it holds
            read[b["path"]] = ls.lines_of(b["path"])
        lines = read[b["path"]]
        first, *rest = b["raw"].split("\n")
        a, c = b["line"] - 1, b["col"] - 1
        end = (a + 1, len(rest[-1])) if rest else (a, c + len(first))
        out.append(t.Location(uri=from_fs_path(b["path"]), range=_range(ls.encoding, lines, a, c, *end)))
    return out


def diagnostics(ls: VaultServer, uri: str, doc: tuple[int | None, str]) -> list[t.Diagnostic]:
    """The broken and ambiguous links of one version of an open document, and a Denote
    identifier keyword that disagrees with its file name (identity_diagnostic). When the daemon
    cannot say (down, lost midway, or failing the request), none: those published before
    are of a text that may be gone (lines that no longer exist), and the user is told once
    that it is down. Over the size cap, one diagnostic saying so (too_big), and nothing of
    it is parsed. Raises Dropped when a newer version came meanwhile."""
    path = uri_path(uri)
    size = buffer_size(doc[1], ls.cap)
    if size is not None:
        return [too_big(size, ls.cap)]
    buf = ls.parsed(uri, path, doc) if path else None
    if buf is None:
        return []
    try:
        dests = ls.asked(buf.path, lambda s: resolve_all(s, buf))
    except DaemonUnavailable:
        dests = None  # lost midway: said by the session
    out = [x for x in (identity_diagnostic(ls, buf),) if x is not None and dests is not None]
    for ln, d in zip(buf.links, dests or ()):
        if d is None or not d.broken:
            continue
        rng = _range(ls.encoding, buf.lines, *buf.span(ln))
        if d.candidates:
            vault = buf.vault or ""
            names = [os.path.relpath(p, vault) if vault and _inside(p, vault) else p for p in d.candidates]
            out.append(t.Diagnostic(
                range=rng, severity=t.DiagnosticSeverity.Warning, source="vaultd", code="ambiguous",
                message=f"ambiguous link: {ln.raw} may be any of " + ", ".join(names),
                related_information=[t.DiagnosticRelatedInformation(location=ls.location(p, None), message=n)
                                     for p, n in zip(d.candidates, names)]))
        else:
            out.append(t.Diagnostic(range=rng, severity=t.DiagnosticSeverity.Warning, source="vaultd",
                                    code="broken", message=f"broken link: {ln.raw}: {d.broken}"))
    return out


def hover(ls: VaultServer, params: t.HoverParams):
    if (got := _followed(ls, params)) is None:
        return None
    buf, link, dest = got
    rng = _range(ls.encoding, buf.lines, *buf.span(link))
    if not dest.path:
        why = dest.broken or "not a note"
        extra = "".join(f"\n- `{p}`" for p in dest.candidates)
        return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=f"**{why}**{extra}"), range=rng)
    lines = ls.lines_of(dest.path)
    target = Buffer(dest.path, "\n".join(lines), buf.vault)
    n = target.note
    start = (dest.line or 1) - 1
    if dest.line is None:  # the top: past front matter and #+ keywords
        while start < len(lines) and (not lines[start].strip() or lines[start].startswith("#+")):
            start += 1
        if lines and lines[0].strip() == "---":
            end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
            start = end + 1 if end else start
            while start < len(lines) and not lines[start].strip():
                start += 1
    shown = "\n".join(lines[start : start + FIRST_LINES]).rstrip()
    tags = "  " + " ".join(f"#{x}" for x in n.tags) if n.tags else ""
    where = os.path.relpath(dest.path, buf.vault) if buf.vault and _inside(dest.path, buf.vault) else dest.path
    at = f":{dest.line}" if dest.line else ""
    broken = f"\n\n**{dest.broken}**" if dest.broken else ""
    fence = "org" if dest.path.endswith(".org") else "markdown"
    value = f"**{n.title}**{tags}\n\n`{where}{at}`{broken}\n\n```{fence}\n{shown}\n```"
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=value), range=rng)


def document_symbols(ls: VaultServer, params: t.DocumentSymbolParams):
    buf = ls.buffer(params.text_document.uri)
    if buf is None:
        return None
    hs = buf.headings
    last = len(buf.lines) - 1
    out: list[t.DocumentSymbol] = []
    stack: list[tuple[int, t.DocumentSymbol]] = []
    for i, h in enumerate(hs):
        end = next((x.line - 2 for x in hs[i + 1 :] if x.level <= h.level), last)
        while end > h.line - 1 and not buf.lines[end].strip():
            end -= 1
        text = buf.lines[h.line - 1] if h.line - 1 < len(buf.lines) else ""
        sym = t.DocumentSymbol(
            name=h.text or "(untitled)", kind=t.SymbolKind.String,
            detail="#" * h.level if not buf.org else "*" * h.level,
            range=_range(ls.encoding, buf.lines, h.line - 1, 0, end, len(buf.lines[end]) if end < len(buf.lines) else 0),
            selection_range=_range(ls.encoding, buf.lines, h.line - 1, 0, h.line - 1, len(text)),
            children=[])
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        (stack[-1][1].children if stack else out).append(sym)
        stack.append((h.level, sym))
    return out


def workspace_symbols(ls: VaultServer, params: t.WorkspaceSymbolParams):
    if not params.query.strip():
        return []
    root = ls.workspace.root_path
    hits = ls.asked(root, lambda s: s.request("search", q=params.query, limit=50)["hits"], failed=[])
    if hits is None:
        return None
    out = []
    for h in hits:
        out.append(t.SymbolInformation(name=h["title"], kind=t.SymbolKind.File, location=ls.location(h["path"], None),
                                       container_name=" ".join(f"#{x}" for x in h["tags"]) or None))
    return out


# -- completion --------------------------------------------------------------------------

_TYPED = "|".join(map(re.escape, TYPED))  # the Org link types typed after `[[`: file, denote, id
_TYPED_PLACE = re.compile(rf"^({_TYPED}):(.*?)::(.*)$")  # [[denote:ID::*Head
_TYPED_NOTE = re.compile(rf"^({_TYPED}):")
_MD_TARGET = re.compile(r"(?<!\])\[[^\[\]]*\]\((<?[^()\s<>]*)$")
"""A Markdown link's target being typed: `[text](` then what was typed of it."""
_MD_TAG = re.compile(r"(?:^|(?<=[\s(]))#([^\s#\[\]()]*)$")
_ORG_TAGS = re.compile(r"^(?:\*+\s.*\s|#\+filetags:\s*)(?::[^\s:]+)*:([^\s:]*)$", re.IGNORECASE)


def completion(ls: VaultServer, params: t.CompletionParams):
    buf = ls.buffer(params.text_document.uri)
    if buf is None:
        return None
    line = params.position.line
    text = buf.lines[line] if line < len(buf.lines) else ""
    char = to_char(ls.encoding, text, params.position.character)
    before = text[:char]
    after = text[char:]
    at = before.rfind("[[")
    if at >= 0 and "]" not in before[at:]:
        return _link_completion(ls, buf, line, at + 2, char, before[at + 2 :], after)
    md = None if buf.org else _MD_TARGET.search(before)
    if md:
        return _path_completion(ls, buf, line, md.start(1), char, md[1])
    m = (_ORG_TAGS if buf.org else _MD_TAG).search(before)
    if m:
        return _tag_completion(ls, buf, line, m.start(1), char)
    return None


def _path_completion(ls: VaultServer, buf: Buffer, line: int, a: int, b: int, typed: str):
    """Inside a Markdown link's target, `[text](`: the vault's notes by their path relative to
    this note (URL-encoded, as a Markdown link writes a path; as they are inside `<...>`),
    then, after `#`, the headings of the note typed (this one when no path is), by the slug
    a Markdown link names a heading with."""
    angle = typed.startswith("<")
    typed = typed[angle:]
    if "#" in typed:
        written, _, anchor = typed.partition("#")
        path = _target_path(ls, buf, f"[x]({written})") if written else buf.path
        if not path:
            return None
        target = Buffer(path, "\n".join(ls.lines_of(path)), buf.vault)
        start = b - len(anchor)
        return t.CompletionList(is_incomplete=False, items=[
            t.CompletionItem(label=h.anchor, kind=t.CompletionItemKind.Reference, filter_text=h.anchor,
                             detail=f"{'#' * h.level} {h.text}  line {h.line}",
                             text_edit=_edit(ls, buf, line, start, b, h.anchor)) for h in target.headings])
    notes = _notes(ls, buf, "")
    if notes is None:
        return None
    here = os.path.dirname(buf.path)
    want = unquote(typed).casefold()
    items = []
    for n in notes:
        rel = os.path.relpath(n["path"], here).replace(os.sep, "/")
        if n["path"] == buf.path or want not in rel.casefold() and want not in n["title"].casefold():
            continue
        written = rel if angle else quote(rel)
        items.append(t.CompletionItem(label=rel, kind=t.CompletionItemKind.File, detail=n["title"],
                                      filter_text=f"{written} {n['title']}",
                                      text_edit=_edit(ls, buf, line, a + angle, b, written)))
    return t.CompletionList(is_incomplete=len(items) > COMPLETIONS, items=items[:COMPLETIONS])


def _edit(ls: VaultServer, buf: Buffer, line: int, a: int, b: int, text: str) -> t.TextEdit:
    return t.TextEdit(range=_range(ls.encoding, buf.lines, line, a, line, b), new_text=text)


def _tag_completion(ls, buf, line, a, b):
    if (res := _ask(ls, buf.path, "tags", every="tags")) is None:
        return None
    tags = res["tags"]
    return t.CompletionList(is_incomplete=False, items=[
        t.CompletionItem(label=x["tag"], kind=t.CompletionItemKind.Keyword, detail=f"{x['count']} notes",
                         text_edit=_edit(ls, buf, line, a, b, x["tag"])) for x in tags])


def _link_completion(ls, buf, line, a, b, typed, after):
    close = "" if after.startswith("]") else "]]"
    org_link = _TYPED_PLACE.match(typed)
    if org_link or (not buf.org and "#" in typed):
        # a place in a note: its headings (and blocks after ^)
        if org_link:
            kind, name, anchor = org_link.groups()
            raw = f"[[{kind}:{name}]]"
            start = b - len(anchor)
        else:
            name, _, anchor = typed.partition("#")
            raw = f"[[{name}]]" if name else None
            start = b - len(anchor)
        path = _target_path(ls, buf, raw) if raw else buf.path
        if not path:
            return None
        target = Buffer(path, "\n".join(ls.lines_of(path)), buf.vault)
        items = []
        if anchor.startswith("^") or anchor.startswith("#^"):
            for bl in target.note.blocks:
                if not bl.id.startswith("id:"):
                    items.append(t.CompletionItem(label="^" + bl.id, kind=t.CompletionItemKind.Reference,
                                                  detail=f"line {bl.line}",
                                                  text_edit=_edit(ls, buf, line, start, b, "^" + bl.id + close)))
            return t.CompletionList(is_incomplete=False, items=items)
        unit = TYPED[org_link.group(1)] if org_link else WIKI  # how the link names a heading
        for h in target.headings:
            named = unit.heading(h.text)
            items.append(t.CompletionItem(label=named, kind=t.CompletionItemKind.Reference,
                                          detail=f"{'*' if target.org else '#'}" * h.level + f" line {h.line}",
                                          filter_text=named,
                                          text_edit=_edit(ls, buf, line, start, b, named + close)))
        return t.CompletionList(is_incomplete=False, items=items)
    form = typed.split(":", 1)[0] + ":" if _TYPED_NOTE.match(typed) else ""
    notes = _notes(ls, buf, typed[len(form):])
    if notes is None:
        return None
    items = []
    for n in notes[:COMPLETIONS]:
        rel = n["rel"]
        stem = Path(rel).stem if rel.endswith(NOTE_SUFFIXES) else Path(rel).name
        here = os.path.relpath(n["path"], os.path.dirname(buf.path))
        for shown in dict.fromkeys([n["title"], *(n.get("aliases") or ())]):
            if buf.org or form:  # Org's [[denote:ID][Title]] or [[file:path][Title]]
                unit, name = (DENOTE, n["id"]) if n.get("id") and form != f"{ORG_FILE.typed}:" else (ORG_FILE, here)
                # inside an existing `][description]]` the user's description is kept
                insert = unit.complete(name, None if after.startswith("][") else shown, close)
                filter_text = f"{unit.complete(name, None, '')} {shown}" if form else \
                    f"{shown} {stem} {n.get('id') or ''}"
            else:  # Obsidian's [[name]], [[name|alias]]
                insert = WIKI.complete(stem, None if shown in (n["title"], stem) else shown, close)
                filter_text = f"{shown} {stem} {n.get('id') or ''}"
            items.append(t.CompletionItem(label=shown, kind=t.CompletionItemKind.File, detail=rel,
                                          filter_text=filter_text.strip(),
                                          text_edit=_edit(ls, buf, line, a, b, insert)))
    return t.CompletionList(is_incomplete=len(notes) > COMPLETIONS, items=items)


def _target_path(ls: VaultServer, buf: Buffer, raw: str) -> str | None:
    """The note a link written as `raw` in the buffer leads to."""
    res = _ask(ls, buf.path, "resolve", link=raw, **{"from": buf.path})
    return None if res is None else res["path"]


def _notes(ls: VaultServer, buf: Buffer, typed: str) -> list[dict] | None:
    """Notes to offer as link targets for what was typed (their title, an alias, file name or
    Denote identifier holds it; those that begin with it first): path, title, aliases, id."""
    if (res := _ask(ls, buf.path, "list", every="notes")) is None:
        return None
    notes = res["notes"]
    want = typed.strip().casefold()
    vault = buf.vault
    ranked = []
    for n in notes:
        n["rel"] = os.path.relpath(n["path"], vault) if vault else n["path"]
        names = [x.casefold() for x in (n["title"], *n["aliases"], Path(n["rel"]).stem, n["id"] or "") if x]
        if not want or any(want in x for x in names):
            ranked.append((not any(x.startswith(want) for x in names), n["title"].casefold(), n))
    return [n for *_, n in sorted(ranked, key=lambda r: r[:2])]


# -- editing: rename, the editor's own file renames, code actions --------------------------
#
# A rename is vaultd's write: the daemon's `rename` op plans it, checks every link against the
# vault as it will be, writes it through its journal (undone by `vaultq undo OP`). The editor
# writes nothing of it: the files are on disk when the reply goes, and the reply's edits only
# bring the editor's open buffers to what is on disk (see rename). A note made from a broken
# link is the editor's own write (a CreateFile and its text, as LSP servers do).


class Refused(JsonRpcException):
    """The error reply to an edit that was not made, saying why (RequestFailed: understood,
    and refused). Nothing was written."""

    CODE = int(t.LSPErrorCodes.RequestFailed)
    MESSAGE = "refused"


_ORG_TITLE_KEY = re.compile(r"^[ \t]*#\+title:[ \t]*(.*?)[ \t]*$", re.IGNORECASE)
_TITLE_KEY = re.compile(r"^title[ \t]*[:=][ \t]*(.*?)[ \t]*$")
_IDENTIFIER_KEY = re.compile(r"^[ \t]*(?:#\+)?identifier[ \t]*[:=][ \t]*[\"']?(.*?)[\"']?[ \t]*$", re.IGNORECASE)
_TEXT_KEY = re.compile(r"^\w+:")


def keyword_lines(buf: Buffer) -> range:
    """The 0-based lines that may hold the note's keywords: an Org note's before its first
    heading, a Denote text note's leading `key:` lines, a Markdown note's front matter."""
    lines = buf.lines
    if buf.org:
        return range(next((i for i, x in enumerate(lines) if re.match(r"\*+[ \t]", x)), len(lines)))
    if buf.path.lower().endswith(TEXT_SUFFIX):
        return range(next((i for i, x in enumerate(lines) if not _TEXT_KEY.match(x)), len(lines)))
    first = lines[0].strip().lstrip("\ufeff") if lines else ""
    if first in ("---", "+++"):
        closing = ("---", "...") if first == "---" else ("+++",)
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in closing), None)
        if end is not None:
            return range(1, end)
    return range(0)


def _keyword(buf: Buffer, pattern: re.Pattern) -> tuple[int, int, int] | None:
    """(line, start, end), 0-based characters, of the value of the first keyword line `pattern` matches."""
    for i in keyword_lines(buf):
        m = pattern.match(buf.lines[i].rstrip("\r"))
        if m:
            return i, m.start(1), m.end(1)
    return None


def title_span(buf: Buffer) -> tuple[int, int, int] | None:
    """Where the note's title keyword's value is: `#+title:`, or `title:` in front matter."""
    return _keyword(buf, _ORG_TITLE_KEY if buf.org else _TITLE_KEY)


class Renaming:
    """What a rename at the cursor renames: the note `note` (absolute path), or its heading
    on `line` (1-based); what it is called now (`text`), and the buffer's span the cursor is
    in (line, char, end line, end char: 0-based characters)."""

    def __init__(self, note: str, line: int | None, text: str, span: tuple[int, int, int, int]):
        self.note, self.line, self.text, self.span = note, line, text, span


def renaming(ls: VaultServer, buf: Buffer, line: int, char: int) -> Renaming | None:
    """What a rename at (line, char) renames: on a link, the note it leads to (a link within
    the note: the heading it leads to); on the title keyword's line, or on a Markdown note's
    first H1 where no keyword gives the title, the note itself; on a heading, that heading.
    None elsewhere (a URL, a broken or ambiguous link, plain text)."""
    link = buf.link_at(line, char)
    if link is not None:
        if link.kind in NOT_NOTES or (dest := _dest(ls, buf, link)) is None or not dest.path or dest.candidates:
            return None
        if link.kind in WITHIN_SOURCE:
            h = next((x for x in buf.headings if x.line == dest.line), None)
            return None if h is None else Renaming(buf.path, h.line, h.text, buf.span(link))
        target = Buffer(dest.path, "\n".join(ls.lines_of(dest.path)), buf.vault)
        return Renaming(dest.path, None, target.note.title, buf.span(link))
    span = title_span(buf)
    if span is not None and span[0] == line:
        return Renaming(buf.path, None, buf.note.title, (line, span[1], line, span[2]))
    h = next((x for x in buf.headings if x.line == line + 1), None)
    if h is None:
        return None
    text = buf.lines[line]
    at = max(0, text.find(h.text))
    span4 = (line, at, line, at + len(h.text))
    first_h1 = next((x for x in buf.headings if x.level == 1), None)
    if not buf.org and h is first_h1 and span is None:
        return Renaming(buf.path, None, buf.note.title, span4)
    return Renaming(buf.path, h.line, h.text, span4)


def prepare_rename(ls: VaultServer, params: t.PrepareRenameParams):
    if (cur := _cursor(ls, params)) is None:
        return None
    buf, line, char = cur
    r = renaming(ls, buf, line, char)
    if r is None:
        return None
    return t.PrepareRenamePlaceholder(range=_range(ls.encoding, buf.lines, *r.span), placeholder=r.text)


def _vault_path(vault: str, p: str) -> str:
    return p if os.path.isabs(p) else os.path.join(vault, p)


def norm(text: str) -> str:
    """Text as an editor's buffer holds it, to compare with a file: no BOM, lines ending in \\n."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def ask_rename(ls: VaultServer, near: str, **args) -> dict:
    """The daemon's `rename` op's answer; Refused (said to the user too) when it refuses or
    is down."""
    with ls.session(near) as s:
        if s is None:
            raise ls.refuse("the daemon is not running: nothing was renamed")
        try:
            return s.request("rename", diff_max=64 << 20, files_max=100_000, **args)
        except RequestFailed as e:
            raise ls.refuse(e.said("LSP")) from None


def rename(ls: VaultServer, params: t.RenameParams):
    """Rename, as vaultd's own journaled write. The daemon's dry run names the files it would
    write; when one of them is open in the editor with changes not saved, nothing is done
    (save first). Else the daemon writes (check_editors off: this server knows the editor's
    buffers, and an editor's swap file would otherwise refuse every rename), and the reply
    edits each open buffer of a file written, line by line, into the file's new text: the
    editor then holds what is on disk, and nothing is applied twice (the edits change only
    buffers; saving them writes the same bytes). The renamed note's own buffer, if open, is
    of a file no longer there: the editor is asked to show the new one (window/showDocument,
    when it can) and told to close the old one unsaved. The message says what changed and
    how to undo it (`vaultq undo OP`)."""
    if (cur := _cursor(ls, params)) is None:
        return None
    buf, line, char = cur
    r = renaming(ls, buf, line, char)
    if r is None:
        raise ls.refuse("nothing to rename here: put the cursor on a link, a note's title or a heading")
    args = {"note": r.note, "title": params.new_name, "line": r.line}
    vault = buf.vault or ""
    plan = ask_rename(ls, buf.path, dry_run=True, **args)
    files = [_vault_path(vault, p) for p in plan["files"]]
    unsaved = [os.path.relpath(p, vault) for p in files if ls.unsaved(p)]
    if unsaved:
        raise ls.refuse(f"save first: {', '.join(unsaved)} {'has' if len(unsaved) == 1 else 'have'} changes not "
                        "saved, and the rename writes there; nothing was renamed")
    done = ask_rename(ls, buf.path, dry_run=False, check_editors=False, **args)
    note, to = _vault_path(vault, done["note"]), _vault_path(vault, done["to"])
    edit = ls.buffers_to_disk([_vault_path(vault, p) for p in done["files"]])
    moved = ls.moved_buffer(note, to)
    ls.say(t.MessageType.Info, renamed_message(done, vault, moved))
    return edit


def renamed_message(done: dict, vault: str, moved: bool) -> str:
    """What the user is told of a rename done: what changed, and how to undo it."""
    rel = lambda p: os.path.relpath(_vault_path(vault, p), vault)  # noqa: E731
    what = f"{rel(done['note'])}:{done['heading']}" if done.get("heading") else rel(done["note"])
    others = len({rel(p) for p in done["files"]} - {rel(done["note"]), rel(done["to"])})
    said = f"vaultd: renamed {what}" + (f" to {rel(done['to'])}" if done["note"] != done["to"] else "") + \
        f": {_count(done['rewritten'], 'link')} rewritten in {_count(others, 'other note')}, " \
        f"{_count(done['relabeled'], 'label')} following the new name"
    if moved:
        said += f"; the buffer of {rel(done['note'])} is of a file no longer there: close it without saving"
    return said + f". Undo: vaultq undo {done['op']}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def line_edits(ls: VaultServer, old: str, new: str) -> list[t.TextEdit]:
    """Edits turning the buffer text `old` into `new` (compared as norm() makes them): each
    line that differs replaced (its line ending kept), or the whole text when the lines'
    count differs."""
    a, b = old.split("\n"), norm(new).split("\n")
    if len(a) != len(b):
        end = position(ls.encoding, a, len(a) - 1, len(a[-1]))
        crlf = "\r\n" in old
        return [t.TextEdit(range=t.Range(start=t.Position(line=0, character=0), end=end),
                           new_text=norm(new).replace("\n", "\r\n") if crlf else norm(new))]
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        cr = x.endswith("\r")
        if x.removesuffix("\r") != y:
            out.append(t.TextEdit(range=_range(ls.encoding, a, i, 0, i, len(x) - cr), new_text=y))
    return out


# -- the editor's own file renames

DIFF_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_texts(diff: str, before: dict[str, str]) -> dict[str, str | None]:
    """The text of each file a unified diff (difflib's, of texts split by str.splitlines)
    changes, after it: `before` holds each changed file's text before, by the diff's path (a
    file the diff creates is not in it); None for a file it removes. A file's last line with
    no line ending runs into what follows it in such a diff (its new line, the next file's
    `--- ` header): split off again, by the old line's known length or at the header."""
    els = diff.splitlines(keepends=True)
    out: dict[str, str | None] = {}
    i = 0
    while i < len(els):
        old, new = els[i][4:].rstrip("\r\n"), els[i + 1][4:].rstrip("\r\n")
        i += 2
        path = new[2:] if new != "/dev/null" else old[2:]
        lines = before.get(path, "").splitlines(keepends=True) if old != "/dev/null" else []
        result, at = [], 0
        while i < len(els) and els[i].startswith("@@"):
            m = DIFF_HUNK.match(els[i])
            o_start, o_n, n_n = int(m[1]), int(m[2] or 1), int(m[4] or 1)
            i += 1
            start = o_start - 1 if o_n else o_start
            result += lines[at:start]
            at = start + o_n
            cur = start
            while o_n > 0 or n_n > 0:
                el = els[i]
                if el[0] in " -":
                    was = lines[cur] if cur < len(lines) else ""
                    cur += 1
                    if was == was.rstrip("\r\n") and len(el) > 1 + len(was):  # the last line, no ending
                        els[i:i + 1] = [el[:1 + len(was)], el[1 + len(was):]]
                        el = els[i]
                i += 1
                o_n -= el[0] in " -"
                n_n -= el[0] in " +"
                cut = max(el.rfind("--- a/"), el.rfind("--- /dev/null"))
                if o_n <= 0 and n_n <= 0 and cut > 0 and i < len(els) and els[i].startswith("+++ "):
                    el, els[i - 1] = el[:cut], el[cut:]  # the new last line, with no ending
                    i -= 1
                if el[0] in " +":
                    result.append(el[1:])
        result += lines[at:]
        out[path] = None if new == "/dev/null" else "".join(result)
    return out


def _file_title(old: str, new: str) -> str | None:
    """The title that makes vaultd's rename name the note `old` as `new` (same folder, same
    extension): a Denote name's title part (its identifier, signature and keywords kept), else
    the new file name's stem; None when no title does."""
    if os.path.dirname(old) != os.path.dirname(new):
        return None
    (a, ext_a), (b, ext_b) = os.path.splitext(os.path.basename(old)), os.path.splitext(os.path.basename(new))
    if ext_a != ext_b:
        return None
    was, now = parse_name(a), parse_name(b)
    if was is None:
        return b
    if now is None or (now.id, now.signature, now.keywords) != (was.id, was.signature, was.keywords) or not now.title:
        return None
    return now.title


def will_rename_files(ls: VaultServer, params: t.RenameFilesParams):
    """An editor renaming a note's file itself (not through vaultd): the links to it in
    other notes (and its own title keyword, as `vaultq rename` writes it), as edits applied
    before the rename. The daemon's dry run of a rename to the title that gives the new name
    is the plan (see _file_title); a name no title gives (another folder, other Denote
    keywords) gets no edits, and the user is told so. Nothing is written by vaultd."""
    changes: dict[str, list[t.TextEdit]] = {}
    for f in params.files:
        old, new = uri_path(f.old_uri), uri_path(f.new_uri)
        if not old or not new or not old.lower().endswith(NOTE_SUFFIXES + (TEXT_SUFFIX,)):
            continue
        for uri, edits in (ls.file_renamed(old, new) or {}).items():
            changes.setdefault(uri, []).extend(edits)
    return t.WorkspaceEdit(changes=changes) if changes else None


# -- code actions: a note made from a broken link, an identifier keyword fixed


def _front_matter(ext: str, title: str, ident: str | None, alias: str | None) -> str:
    """A new note's opening text: Denote's front matter for its file type when it has an
    identifier (`ident`), else a title in the note's own syntax."""
    if ident is None:
        return f"#+title: {title}\n\n" if ext == ".org" else f"# {title}\n\n"
    when = datetime.strptime(ident, "%Y%m%dT%H%M%S").astimezone()
    if ext == ".org":
        return (f"#+title:      {title}\n#+date:       [{when:%Y-%m-%d %a %H:%M}]\n#+filetags:   \n"
                f"#+identifier: {ident}\n\n")
    if ext == TEXT_SUFFIX:
        return (f"title:      {title}\ndate:       {when:%Y-%m-%d}\ntags:       \nidentifier: {ident}\n"
                f"{'-' * 27}\n\n")
    aliases = f"aliases:    [{json.dumps(alias, ensure_ascii=False)}]\n" if alias else ""
    return (f"---\ntitle:      {json.dumps(title, ensure_ascii=False)}\ndate:       {when.isoformat()}\n"
            f"tags:       []\nidentifier: \"{ident}\"\n{aliases}---\n\n")


def _denote_name(ident: str, title: str, ext: str) -> str:
    slug = denote_slug(title)
    return f"{ident}--{slug}{ext}" if slug else f"{ident}{ext}"


def _new_identifier(ls: VaultServer, near: str) -> str:
    """A Denote identifier for now that no note has yet (a second later while one has)."""
    when = datetime.now()
    for _ in range(60):
        ident = when.strftime("%Y%m%dT%H%M%S")
        res = _ask(ls, near, "resolve", link=f"denote:{ident}")
        if res is None or res["broken"] == NO_IDENTIFIER:
            return ident
        when += timedelta(seconds=1)
    return ident


def _obsidian_folder(vault: str, here: str) -> str:
    """Where Obsidian makes a new note (.obsidian/app.json's newFileLocation): the vault's
    top (its default), the current note's folder, or the folder it names."""
    try:
        with open(os.path.join(vault, ".obsidian", "app.json"), encoding="utf-8") as f:
            app = json.load(f)
    except (OSError, ValueError):
        return vault
    if app.get("newFileLocation") == "current":
        return here
    if app.get("newFileLocation") == "folder" and isinstance(app.get("newFileFolderPath"), str):
        return os.path.join(vault, app["newFileFolderPath"])
    return vault


def new_note(ls: VaultServer, buf: Buffer, link: Link) -> tuple[str, str] | None:
    """The file a broken link names (absolute path) and the text it is made with, in the
    vault's convention: a `denote:` link's identifier (its description the title); the path
    a Markdown or Org `file:` link names; for a wikilink, in a Denote vault (the note's own
    file name is a Denote name) a Denote name with a new identifier (the link's name kept as
    an alias, so that it leads there), else Obsidian's `Name.md`. None when it names no
    file this can make (outside the vault, a name no file may have)."""
    vault, here = buf.vault, os.path.dirname(buf.path)
    ext = os.path.splitext(buf.path)[1].lower()
    if not vault or not link.target:
        return None
    if link.kind == DENOTE.kind:
        if not IDENTIFIER.fullmatch(link.target):
            return None
        title = link.label.strip() or link.target
        return os.path.join(here, _denote_name(link.target, title, ext)), _front_matter(ext, title, link.target, None)
    target = link.target
    if link.kind in ("md", "file"):
        path = os.path.join(vault, target.lstrip("/")) if target.startswith("/") and link.kind == "md" else \
            os.path.join(here, target)
        if not os.path.splitext(target)[1]:
            path += ".md" if link.kind == "md" else ext
        title = os.path.splitext(os.path.basename(path))[0]
    elif link.kind in ("wiki", "embed"):
        title = target.rsplit("/", 1)[-1]
        if parse_name(os.path.splitext(os.path.basename(buf.path))[0]) is not None and "/" not in target:
            ident = _new_identifier(ls, buf.path)
            return os.path.join(here, _denote_name(ident, title, ".md")), _front_matter(".md", title, ident, target)
        path = os.path.join(vault, target) if "/" in target else os.path.join(_obsidian_folder(vault, here), target)
        path += "" if target.lower().endswith(".md") else ".md"
    else:
        return None
    path = os.path.normpath(path)
    if not _inside(path, vault) or os.path.lexists(path):
        return None
    return path, _front_matter(os.path.splitext(path)[1].lower(), title, None, None)


def code_actions(ls: VaultServer, params: t.CodeActionParams):
    """On a broken link (in the range asked), `Create note NAME` (see create_note_actions). On
    a Denote note's identifier keyword that disagrees with its file name, the keyword fixed to
    the file name's identifier. On a plain mention of a note's title (the cursor on it, or
    the selection), `Link "Title"` (see link_actions). Only the kinds the client asks for
    (`context.only`): the first two are quick fixes, the links rewrites."""
    buf = ls.buffer(params.text_document.uri)
    if buf is None:
        return None
    first, last = params.range.start.line, params.range.end.line
    only = params.context.only if params.context else None
    out: list[t.CodeAction] = []
    if _wanted(only, t.CodeActionKind.QuickFix):
        out += create_note_actions(ls, buf, first, last)
        fix = identity_fix(ls, buf, first, last)
        out += [fix] if fix else []
    if _wanted(only, t.CodeActionKind.RefactorRewrite):
        out += link_actions(ls, buf, params.range)
    return out


def _wanted(only: list[str] | None, kind: str) -> bool:
    """Whether actions of `kind` are asked for: all are, unless the client names the kinds it
    wants (a kind asks for its sub-kinds too: `refactor` for `refactor.rewrite`)."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def create_note_actions(ls: VaultServer, buf: Buffer, first: int, last: int) -> list[t.CodeAction]:
    """`Create note NAME` on each broken link between lines `first` and `last`: the note it
    names, made by the editor (a CreateFile and its text), so that the link leads there
    once saved."""
    out: list[t.CodeAction] = []
    for link in buf.links:
        a, _, c, _ = buf.span(link)
        if c < first or a > last or link.kind in NOT_NOTES or link.kind in WITHIN_SOURCE:
            continue
        dest = _dest(ls, buf, link)
        if dest is None or dest.path or dest.broken not in (NO_NOTE, NO_IDENTIFIER):
            continue
        made = new_note(ls, buf, link)
        if made is None:
            continue
        path, text = made
        uri = from_fs_path(path)
        rel = os.path.relpath(path, buf.vault)
        out.append(t.CodeAction(
            title=f"Create note {rel}", kind=t.CodeActionKind.QuickFix,
            edit=t.WorkspaceEdit(document_changes=[
                t.CreateFile(uri=uri, options=t.CreateFileOptions(overwrite=False, ignore_if_exists=True)),
                t.TextDocumentEdit(text_document=t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                                   edits=[t.TextEdit(range=_at_line(1), new_text=text)])])))
    return out


# -- code actions: a plain mention of a note's title made a link

MENTIONS = 5
"""`Link "Title"` actions offered at most at one place (longest mention first)."""
AROUND = 1000
"""Characters of the line on each side of the cursor (or selection) sent to the daemon: a
title is at most 200 (query/mentions.LONGEST), and a 5 MB line costs what a short one does."""


def link_actions(ls: VaultServer, buf: Buffer, rng: t.Range) -> list[t.CodeAction]:
    """`Link "Title"`: the plain text under the cursor (or the selection, on one line) that
    is a note's title or alias, made a link to that note in this buffer's syntax (see
    link_forms), the text as written kept as the link's label where it differs from what
    the link shows. Which titles, the daemon says (its `mentions` op: whole words, longest
    first, not the buffer's own title); here a mention is dropped when it overlaps a link,
    or when the link written there would not be read as one (code, front matter, a keyword
    line: vaultd's parser reads the line as it would be), or would not lead to that note
    (the daemon's `resolve`, from this buffer)."""
    line = rng.start.line
    if line != rng.end.line or line >= len(buf.lines) or (not buf.org and line in keyword_lines(buf)):
        return []
    text = buf.lines[line]
    a, b = to_char(ls.encoding, text, rng.start.character), to_char(ls.encoding, text, rng.end.character)
    if (a == b and buf.link_at(line, a) is not None) or b - a > AROUND:
        return []
    lo, hi = max(0, a - AROUND), min(len(text), b + AROUND)
    while 0 < lo and not text[lo - 1].isspace() and lo > a - 2 * AROUND:  # not from inside a word
        lo -= 1
    while hi < len(text) and not text[hi].isspace() and hi < b + 2 * AROUND:
        hi += 1
    args = {"text": text[lo:hi], "col": a - lo + 1, "from": buf.path, "limit": MENTIONS}
    if b > a:
        args["end_col"] = b - lo + 1

    def work(s: Session) -> list[t.CodeAction]:
        found = s.request("mentions", **args)["mentions"]
        titles = [m["title"] for m in found]
        out = []
        for m in found:
            start, end = lo + m["col"] - 1, lo + m["end_col"] - 1
            if _over_link(buf, line, start, end):
                continue
            written = next((w for w in link_forms(buf, m) if _leads(s, buf, line, start, end, w, m["path"])), None)
            if written is not None:
                out.append(_link_action(ls, buf, line, start, end, written, m, titles.count(m["title"]) > 1))
        return out

    return ls.asked(buf.path, work, failed=[]) or []


def _over_link(buf: Buffer, line: int, start: int, end: int) -> bool:
    """Whether characters [start, end) of 0-based `line` overlap one of the buffer's links."""
    for ln in buf.links:
        if line - 1 <= ln.line - 1 <= line:  # on this line, or an Org description from the one before
            a, b, c, d = buf.span(ln)
            if (a, b) < (line, end) and (line, start) < (c, d):
                return True
    return False


def wikilinks(buf: Buffer) -> bool:
    """Whether a new link in this Markdown buffer is a [[wikilink]] rather than a
    [Markdown](link.md): as most of its own links are written (a tie: wikilinks); with none,
    wikilinks in an Obsidian vault (a `.obsidian` folder), else Markdown links, which every
    Markdown tool reads."""
    written = [ln.raw.lstrip("!").startswith("[[") for ln in buf.links if ln.kind in MARKDOWN_OR_WIKI]
    if written:
        return 2 * sum(written) >= len(written)
    return bool(buf.vault) and os.path.isdir(os.path.join(buf.vault, ".obsidian"))


def link_forms(buf: Buffer, m: dict) -> list[str]:
    """The links to the note a mention `m` names, written as this buffer's links are, the
    text as written (`m["text"]`) its label: in Org, `[[denote:ID][text]]` for a note with
    a Denote identifier, then `[[file:path][text]]`; in Markdown, `[[Name]]` (`[[Name|text]]`
    when the text is not the name) by file name, then by path, where wikilinks are written
    (see wikilinks), and `[text](path.md)`, relative to the buffer. The first that leads to
    the note is used (see link_actions)."""
    path, text = m["path"], m["text"]
    rel = os.path.relpath(path, os.path.dirname(buf.path)).replace(os.sep, "/")
    if buf.org:
        return ([DENOTE.write(m["id"], text)] if m.get("id") else []) + [ORG_FILE.write(rel, text)]
    forms: list[str] = []
    if wikilinks(buf):
        whole = os.path.relpath(path, buf.vault).replace(os.sep, "/") if buf.vault else rel
        for name in (Path(whole).name, whole):
            name = os.path.splitext(name)[0] if name.endswith(NOTE_SUFFIXES) else name
            if WIKI.cannot_name(name) is None:
                forms.append(WIKI.write(name, None if text == name else text))
    return list(dict.fromkeys(forms + [MARKDOWN_LINK.write(rel, text)]))


def _leads(s: Session, buf: Buffer, line: int, start: int, end: int, written: str, path: str) -> bool:
    """Whether `written`, put in place of characters [start, end) of 0-based `line`, is read
    there as a link by vaultd's parser (not in code, a keyword line or front matter), and the
    daemon resolves it, from this buffer, to the note at `path`."""
    text = buf.lines[line]
    top = keyword_lines(buf).stop + 1 if not buf.org and keyword_lines(buf) else 0  # past front matter
    # the lines before only say whether this one is in code: their links, which cost most to read, are masked
    before = [x.replace("[", " ") for x in buf.lines[top:line]]
    links, _, _ = extract([*before, text[:start] + written + text[end:]], top + 1, buf.org)
    if not any(ln.line == line + 1 and ln.col == start + 1 and ln.raw == written for ln in links):
        return False
    r = s.request("resolve", link=written, **{"from": buf.path})
    return r["path"] == path and not r["broken"]


def _link_action(ls: VaultServer, buf: Buffer, line: int, start: int, end: int, written: str, m: dict,
                 shared: bool) -> t.CodeAction:
    """The action `Link "Title"` putting `written` in place of the mention; `Link "text" to
    "Title"` when it names the note by an alias; with the note's path when another note
    offered has the same title."""
    title = f'Link "{m["text"]}" to "{m["title"]}"' if m.get("alias") else f'Link "{m["title"]}"'
    if shared:
        title += f" ({os.path.relpath(m['path'], buf.vault) if buf.vault else m['path']})"
    return t.CodeAction(title=title, kind=t.CodeActionKind.RefactorRewrite,
                        edit=t.WorkspaceEdit(changes={from_fs_path(buf.path): [_edit(ls, buf, line, start, end, written)]}))


def identity_span(buf: Buffer) -> tuple[int, int, int] | None:
    """Where a Denote note's identifier keyword says another identifier than its file name:
    (line, start, end) of the keyword's value; None when it agrees (or there is none)."""
    if not buf.note.id_keyword:
        return None
    return _keyword(buf, _IDENTIFIER_KEY)


def identity_diagnostic(ls: VaultServer, buf: Buffer) -> t.Diagnostic | None:
    """The diagnostic on the identifier keyword that disagrees with the file name: the file
    name's identifier names the note (as Denote follows it), and the fix."""
    span = identity_span(buf)
    if span is None:
        return None
    line, a, b = span
    return t.Diagnostic(range=_range(ls.encoding, buf.lines, line, a, line, b), severity=t.DiagnosticSeverity.Warning,
                        source="vaultd", code="denote-identity",
                        message=f"this note is {buf.note.id}, as its file name says: "
                                f"{mismatch(buf.note.id, buf.note.id_keyword)}")


def identity_fix(ls: VaultServer, buf: Buffer, first: int, last: int) -> t.CodeAction | None:
    span = identity_span(buf)
    if span is None or not first <= span[0] <= last:
        return None
    line, a, b = span
    uri = from_fs_path(buf.path)
    return t.CodeAction(title=f"Set the identifier keyword to {buf.note.id} (the file name's)",
                        kind=t.CodeActionKind.QuickFix, is_preferred=True,
                        edit=t.WorkspaceEdit(changes={uri: [t.TextEdit(
                            range=_range(ls.encoding, buf.lines, line, a, line, b), new_text=buf.note.id)]}))


# -- wiring ------------------------------------------------------------------------------


def off_loop(fn):
    """The request handler that answers with `fn(ls, params)` in a request worker (see
    VaultServer.answer)."""

    async def handler(ls: VaultServer, params):
        return await ls.answer(fn, params)

    handler.__name__ = handler.__qualname__ = fn.__name__
    handler.__doc__ = fn.__doc__
    return handler


def _log_failure(uri: str):
    def done(future) -> None:
        if not future.cancelled() and (e := future.exception()) is not None and not isinstance(e, Dropped):
            logger.error("diagnostics of %s", uri, exc_info=e)

    return done


def build(socket: str | None = None, vault: str | None = None) -> VaultServer:
    """The Language Server over the daemon found by `socket`/`vault` (see pick_socket), or
    else the one of each buffer's vault."""
    ls = VaultServer(daemon(socket, vault))
    ls.feature(t.TEXT_DOCUMENT_DEFINITION)(off_loop(definition))
    ls.feature(t.TEXT_DOCUMENT_REFERENCES)(off_loop(references))
    ls.feature(t.TEXT_DOCUMENT_HOVER)(off_loop(hover))
    ls.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(off_loop(document_symbols))
    ls.feature(t.WORKSPACE_SYMBOL)(off_loop(workspace_symbols))
    ls.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)(off_loop(prepare_rename))
    ls.feature(t.TEXT_DOCUMENT_RENAME, t.RenameOptions(prepare_provider=True))(off_loop(rename))
    ls.feature(t.WORKSPACE_WILL_RENAME_FILES, t.FileOperationRegistrationOptions(filters=[
        t.FileOperationFilter(scheme="file", pattern=t.FileOperationPattern(glob=f"**/*.{{{','.join(NOTE_FILES)}}}"))
    ]))(off_loop(will_rename_files))
    ls.feature(t.TEXT_DOCUMENT_CODE_ACTION, t.CodeActionOptions(code_action_kinds=[
        t.CodeActionKind.QuickFix, t.CodeActionKind.RefactorRewrite]))(off_loop(code_actions))
    ls.feature(t.TEXT_DOCUMENT_COMPLETION,
               t.CompletionOptions(trigger_characters=["[", "#", ":", "*", "^", "(", "/"]))(off_loop(completion))

    # in the event loop's thread, as each message is read: a request after them sees the new text
    @ls.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VaultServer, params: t.DidOpenTextDocumentParams):
        ls.opened(params.text_document.uri)
        ls.check_soon(params.text_document.uri, 0)

    @ls.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VaultServer, params: t.DidChangeTextDocumentParams):
        ls.opened(params.text_document.uri)
        ls.check_soon(params.text_document.uri, DEBOUNCE_S)

    @ls.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VaultServer, params: t.DidSaveTextDocumentParams):
        ls.check_soon(params.text_document.uri, DEBOUNCE_S)  # the daemon reads the saved file meanwhile

    @ls.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VaultServer, params: t.DidCloseTextDocumentParams):
        ls.closed(params.text_document.uri)

    @ls.feature(t.SHUTDOWN)
    def shutdown(ls: VaultServer, *args):
        ls.stop_work()

    return ls


def run(socket: str | None = None, vault: str | None = None) -> None:
    """Serve LSP on stdin/stdout until the client exits (or closes the pipe)."""
    ls = build(socket, vault)
    try:
        ls.start_io()
    finally:
        ls.stop_work()
