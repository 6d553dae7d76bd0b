"""Held-out evaluation: metrics, judges, diversity, tables."""
