"""Trajectory filters: constraint rules, consistency and quality judges."""
