"""Rename: a note (its file name, and its title where the note writes one) or a heading, with
every link to it rewritten in its own syntax (plan: pure, checked before a byte is written),
written, undone and recovered through the journal (store/journal.py), by the Vault's
rename job (job)."""
