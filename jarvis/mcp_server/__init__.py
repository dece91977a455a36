"""Jarvis as an MCP server (``jarvis mcp serve``, DESIGN.md section 12): other agents (Claude
Desktop, Claude Code, Cursor, any MCP client) hand Jarvis desktop tasks.

It is a client of the control API like the TUI and reaches the daemon only through it
(:mod:`~jarvis.mcp_server.link`); its messages are of the ``mcp`` channel, so its tasks run
under ``channels.mcp`` and it can never approve a held call. The tools are in
:mod:`~jarvis.mcp_server.tools`, the command and the HTTP transport's guard in
:mod:`~jarvis.mcp_server.serve`.
"""
