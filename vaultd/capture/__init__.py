"""Agent capture: `remember` appends an agent's entry to a capture note, through the split journal."""
