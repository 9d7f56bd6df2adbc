"""The MCP server through the official MCP client: over stdio and streamable HTTP,
sessions bound to their caller (``tests.mcp_support``)."""
