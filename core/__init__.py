"""The shared kernel: typed configs, records, run store, model client, tracking."""
