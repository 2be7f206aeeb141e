"""Store: what vaultd keeps. The Tantivy index (index), the link graph and note table
(graph), and the state file of what the vault cannot give back (state)."""
