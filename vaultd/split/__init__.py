"""Split: the splitter (splitter: plan and check; written, undone and recovered through
the journal, store/journal.py) and the Vault's split operations and auto-split (auto)."""
