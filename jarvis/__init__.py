"""Jarvis: a desktop computer-use agent."""

from jarvis.freed_memory import scrub_freed_memory

__version__ = "0.1.0"

scrub_freed_memory()  # before any secret is read: see jarvis/freed_memory.py
