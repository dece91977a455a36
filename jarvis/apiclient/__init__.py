"""The one client of the control API (``jarvis serve``, DESIGN section 5): the TUI's
:class:`~jarvis.tui.client.ApiBackend`, the MCP server's
:class:`~jarvis.mcp_server.link.DaemonLink` and ``jarvis stop`` build their HTTP clients,
read answers and decode failures here (:mod:`jarvis.apiclient.http`), and read the event
stream with :mod:`jarvis.apiclient.sse`."""
