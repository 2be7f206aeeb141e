"""Store: what vaultd keeps. The Tantivy index (index), the link graph and note table
(graph, saved by graph_file), the state file of what the vault cannot give back (state),
semantic recall's vectors (vectors), and the journal every write into the vault goes
through (journal, over the checked write: checked)."""
