"""The control API of ``jarvis serve``: HTTP on 127.0.0.1:8765 (FastAPI on uvicorn, in the
gateway's asyncio loop), the live event stream, and the web panel at ``/``.

Placeholder docstring: replaced with the full wire format below.
"""
