"""Ingest: files in, index batches out. Which files are notes (filters), what changed
(watcher: debounced batches), reading them (workers: parse in processes), and the
indexer loop and reconcile that turn changes into index commits (update, indexer)."""
