"""Codex CLI integration: its hooks file, its MCP servers in ``config.toml``, its session files."""
