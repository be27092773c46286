"""Exploring a catalog: filtered rows, planes, curves, best dataviews and their Pareto
front, and the choice of epsilon (`scores`); the mobility measures by risk threshold
(`mobility`); the policy check is sanitize/check.py. Each module is imported by itself:
`assess` needs the mobility measures, not the scores."""
