"""Claude Code integration: its settings, MEMORY.md, the always-on layer, the MCP configuration."""
