from jarvis.cli import entry

entry()
