"""Test doubles that speak the product's real protocols: a fake OpenAI-compatible server and the provider rules it
enforces, a vLLM replica simulator, a scripted HTTP server for web APIs, a fake model playing every role, runners of
the rollout Runner protocol, PDF decks, and run directories written through the product's own store and records.
Tests and benchmarks use them; the product never imports them (tests/test_layers.py)."""
