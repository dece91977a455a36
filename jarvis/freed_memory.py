"""Memory is overwritten when malloc hands it out and when it is freed, so no library
can write to disk a secret it never saw.

chromadb's vector index (hnswlib) keeps preallocated arrays and writes them whole to
``long_term/vector/<segment>/length.bin`` and ``data_level0.bin``, unused slots included.
Those slots are whatever malloc handed out: often memory an HTTP client had just freed,
so an API key quoted in a provider's 401 reply was found in ``length.bin`` (CI, and 2 of
3 runs of a reproduction that dirtied another thread's heap first). glibc's ``M_PERTURB``
fills every block malloc returns with one byte and every freed block with its complement,
in every arena, at the cost of a memset per large allocation (about 0.7 ms per 8 MB
buffer here; a step's model call takes a second).

Set when :mod:`jarvis` is imported, before any secret is read. Off glibc (musl, macOS)
``mallopt`` is missing or ignores the option, and nothing changes.
"""

from __future__ import annotations

import ctypes
import sys

M_PERTURB = -6  # glibc's <malloc.h>
FILL = 0xA5


def scrub_freed_memory() -> bool:
    """Ask the C allocator to overwrite handed-out and freed memory; True when it agreed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_PERTURB, FILL))
