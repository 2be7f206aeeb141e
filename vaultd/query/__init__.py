"""Query: answers from the stores. Search planning and ranking (ranking, search),
snippets, context within a budget, the link graph's queries, tiers (HOT, WARM, COLD)."""
