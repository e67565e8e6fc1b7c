"""Helpers shared by GE's Python modules (not a public API)."""
