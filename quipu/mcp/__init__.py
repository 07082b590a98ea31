"""The MCP server through which an agent searches and writes memory."""
