"""Helpers shared by the end-to-end tests: a small protocol client and ways to start servers."""
