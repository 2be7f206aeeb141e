"""The Vault, as imported by its callers (carved along the pipeline in the next commits)."""

from .query.search import Stopped, Vault  # noqa: F401
