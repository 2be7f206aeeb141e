"""Split: the splitter (splitter: plan, check, journal, write, undo) and the Vault's
split operations and auto-split (auto)."""
