"""vaultd: a live Tantivy index and link graph of a Denote/Org/Markdown notes vault."""

__version__ = "0.1.0"
__all__ = ["Config", "Note", "Vault", "__version__"]


def __getattr__(name: str):
    # Lazy, so that `vaultq` (which imports vaultd.vaultq) never pays for tantivy or msgspec.
    if name == "Config":
        from .config import Config

        return Config
    if name == "Note":
        from .note import Note

        return Note
    if name == "Vault":
        from .vault import Vault

        return Vault
    raise AttributeError(f"module 'vaultd' has no attribute {name!r}")
