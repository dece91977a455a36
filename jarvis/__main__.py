from jarvis.gc_pause import pause

pause()  # the garbage collector, until start-up's objects are made (jarvis/gc_pause.py)
from jarvis.cli import entry  # noqa: E402

entry()
