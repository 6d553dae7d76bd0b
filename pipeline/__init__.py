"""Pipeline stages and their orchestration."""
