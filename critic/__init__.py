"""Extrinsic verification: the isolated critic and its injection."""
