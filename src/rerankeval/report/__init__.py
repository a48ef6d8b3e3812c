"""The human-readable results: the Markdown report, its plots, cost and the Pareto frontier, and PR diffs."""
