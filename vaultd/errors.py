"""Exceptions raised by the vaultd library. Each carries what went wrong and where.

The library never prints; the executables (cli.py, vaultq.py) turn these into
messages and exit codes, with the words of the error codes (CODES).
"""

from .render import building


class VaultdError(Exception):
    """Base of every error vaultd raises on purpose."""


class ConfigError(VaultdError):
    """The configuration file or a flag has a bad key or value."""

    def __init__(self, reason: str, path: str | None = None):
        self.reason = reason
        self.path = path
        super().__init__(reason)

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.reason}"


class VaultError(VaultdError):
    """The vault or the state dir cannot be used (missing, not a folder, unwritable)."""


class IndexLocked(VaultdError):
    """Another process holds the index writer lock (usually a running vaultd)."""


class SocketInUse(VaultdError):
    """A live daemon already listens on the socket."""

    def __init__(self, path: str, pid: int | None, hint: str = ""):
        self.path = path
        self.pid = pid
        holder = f"vaultd process {pid}" if pid else "another process"
        super().__init__(f"socket {path} is in use by {holder}" + (f"; {hint}" if hint else ""))


class QueryError(VaultdError):
    """A query or request that cannot be answered as asked (bad argument)."""

    code = "bad_request"


class NoteNotFound(QueryError):
    """No note answers to the name given."""

    code = "not_found"

    def __init__(self, name: str):
        super().__init__(f"no note matches {name!r} (give a vault path, a Denote identifier, an Org ID or a note name)")


class AmbiguousNote(QueryError):
    """Several notes answer to the name given."""

    code = "ambiguous"

    def __init__(self, name: str, candidates: list[str]):
        self.candidates = candidates
        super().__init__(f"{name!r} is ambiguous; it may be any of:\n  " + "\n  ".join(candidates))


class NoLink(QueryError):
    """No link where one was asked about (`resolve` with a column)."""

    code = "not_found"

    def __init__(self, col: int):
        super().__init__(f"no link at column {col}")


class StillIndexing(QueryError):
    """The first index of the vault is still being built: what needs every note waits for it."""

    code = "indexing"

    def __init__(self, progress: str):
        super().__init__(f"{building(progress)}; try again in a moment")


class UnknownVault(QueryError):
    """A request names a vault the daemon does not serve (config `vaults`)."""

    code = "unknown_vault"

    def __init__(self, name: str, known: list[tuple[str, str]]):
        super().__init__(f"no vault {name!r} here; this vaultd serves: " +
                         ", ".join(f"{n} ({p})" for n, p in known))


class VaultMissing(QueryError):
    """A request names a vault of the config whose folder was not there when the daemon
    started: it is served once the folder appears."""

    code = "vault_missing"

    def __init__(self, name: str, path: str):
        super().__init__(f"vault {name!r} ({path}) is not there: vaultd serves it once its folder appears "
                         "(a disk to mount?)")


class CaptureOff(QueryError):
    """`remember` was asked, and agent capture is off (no `[capture] folder`)."""

    code = "capture_off"


class DaemonUnavailable(VaultdError):
    """No daemon answers on the socket."""

    def __init__(self, path: str, reason: str, message: str | None = None):
        self.path = path
        self.reason = reason
        super().__init__(message or (
            f"vaultd is not running on {path} ({reason}).\n"
            "Start it with `vaultd run --vault PATH` (or `make run`), "
            "or `systemctl --user start vaultd`."
        ))


EXIT_OK, EXIT_NONE, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_INDEXING = 0, 1, 2, 3, 4
"""A command line's exit statuses (vaultq's): results; no result (as grep); bad usage or a
bad request; the daemon unreachable (not running, busy, no answer); the first index still
being built (the answer holds the notes read so far)."""


class ErrorCode:
    """One error code of the protocol: what it means, how a face says the daemon's message
    with it (`shown`: the message plain, or after its code), and the exit status it gives a
    command line."""

    __slots__ = ("code", "means", "shown", "exit")

    def __init__(self, code: str, means: str, shown: str = "{code}: {message}", exit: int = EXIT_USAGE):
        self.code, self.means, self.shown, self.exit = code, means, shown, exit


PLAIN = "{message}"
"""A code whose message says it all: shown as it is (the code would only repeat it)."""

CODES = {e.code: e for e in (
    ErrorCode("bad_json", "the line is not a JSON object"),
    ErrorCode("bad_request", "a request its operation's type refuses (a field missing, unknown or out of "
                             "bounds), or one that cannot be answered as asked"),
    ErrorCode("unknown_op", "no operation of that name"),
    ErrorCode("bad_version", "a protocol version this daemon does not speak"),
    ErrorCode("too_deep", "a request nested too deeply to be read"),
    ErrorCode("too_large", "a request line longer than the daemon reads"),
    ErrorCode("internal", "the daemon failed answering (a bug: its log says more)"),
    ErrorCode("busy", "every place of the daemon is answering: try again", "vaultd is busy: {message}",
              EXIT_UNAVAILABLE),
    ErrorCode("not_found", "no note (or no link) answers to the name given", PLAIN, EXIT_NONE),
    ErrorCode("ambiguous", "several notes answer to the name given", PLAIN),
    ErrorCode("indexing", "the first index is still being built: what needs every note waits", PLAIN,
              EXIT_INDEXING),
    ErrorCode("capture_off", "remember was asked, and capture is off", PLAIN),
    ErrorCode("unknown_vault", "the daemon serves no vault of that name", PLAIN),
    ErrorCode("vault_missing", "the vault's folder is not there (yet)", PLAIN, EXIT_UNAVAILABLE),
)}
"""Every error code the daemon answers with, and its words: the one table the faces read."""


def error_code(code: str) -> ErrorCode:
    """The row of `code` (a code this client does not know: said after its code, exit 2)."""
    return CODES.get(code) or ErrorCode(code, "")


def said(code: str, message: str, asker: str = "vaultq") -> str:
    """The daemon's error as a face says it (see CODES); a request with a field this daemon
    does not know says that the daemon may be older than its `asker`."""
    if code == "bad_request" and "unknown field" in message:
        message += f" (is the running vaultd older than this {asker}? restart it)"
    return error_code(code).shown.format(code=code, message=message)


def explain_validation(msg: str) -> str:
    """msgspec says "Expected `int`, got `str` - at `$.watch.debounce_ms`"; name the key first."""
    if " - at `$." in msg:
        what, _, where = msg.partition(" - at `$.")
        return f"{where.rstrip('`')}: {what[0].lower()}{what[1:]}"
    return msg
