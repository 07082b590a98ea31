"""Builders for tests and benchmarks: real stores in tmp dirs, real git, real SQLite."""
