"""Sharing a store through ordinary git remotes."""
