"""MCP: the memory tools over stdio (``memoryd mcp``) and streamable HTTP (``/mcp``)."""

from memoryd.mcp.http import MCP_PATH, McpHttpEndpoint
from memoryd.mcp.server import ADMIN, TOOL_NAMES, Principal, build_server, key_principal

__all__ = [
    "ADMIN",
    "MCP_PATH",
    "TOOL_NAMES",
    "McpHttpEndpoint",
    "Principal",
    "build_server",
    "key_principal",
]
