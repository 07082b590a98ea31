"""Offline passes that turn sessions into memories: capture, gates, enrichment, facts, the profile."""
