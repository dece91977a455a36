"""Memory malloc hands out never holds what was freed before (jarvis/freed_memory.py).

chromadb's index wrote the unused slots of its preallocated arrays to disk as they came
from malloc, and an API key freed by the HTTP client a moment before was found in
``length.bin``. The two tests run in fresh interpreters, so what the pytest process did
before cannot hide or cause a failure.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

KEY = "sk-ant-api03-FREED-then-handed-out-again-0123456789abcdef"

REUSE = """
import ctypes, sys
if sys.argv[1] == "jarvis":
    import jarvis
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
key = sys.argv[2].encode()
block = (key * 100)[:4000]
seen = 0
for _ in range(50):
    first = libc.malloc(4000)
    ctypes.memmove(first, block, 4000)
    libc.free(first)
    again = libc.malloc(4000)  # glibc gives the same block back at once
    seen += key in ctypes.string_at(again, 4000)
    libc.free(again)
print(seen)
"""


def reused(*args: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", REUSE, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_a_freed_block_handed_out_again_no_longer_holds_the_key() -> None:
    assert reused("plain", KEY) == 50  # without Jarvis, the freed key comes back every time
    assert reused("jarvis", KEY) == 0


DIRTY_THEN_STORE = """
import ctypes, sys, threading
from pathlib import Path
import jarvis
from jarvis.memory.embedding import make_embedding
from jarvis.memory.long_term import LongTermMemory, Memory

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
key = sys.argv[2].encode()


def dirty() -> None:  # what an HTTP client thread leaves behind in its heap
    blocks = []
    for size in [64, 200, 400, 1000, 5000, 20000, 170000] * 20:
        block = libc.malloc(size)
        ctypes.memmove(block, (key * (size // len(key) + 1))[:size], size)
        blocks.append(block)
    for block in blocks:
        libc.free(block)


for round in range(3):
    threads = [threading.Thread(target=dirty) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    root = Path(sys.argv[1]) / str(round)
    with LongTermMemory(root, make_embedding(object())) as memory:
        memory.store(Memory(type="preference", content="dark mode in every app", task_ids=["T1"]))
"""


def test_the_vector_index_on_disk_holds_no_freed_secret(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DIRTY_THEN_STORE, str(tmp_path), KEY],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    files = [path for path in tmp_path.rglob("*.bin") if path.is_file()]
    assert any(path.name == "length.bin" for path in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
