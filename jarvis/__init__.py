"""Jarvis: a desktop computer-use agent."""

__version__ = "0.1.0"
