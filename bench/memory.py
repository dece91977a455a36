"""Long-term memory benchmark: insert rate and top-5 retrieval latency at N memories.

Prints one JSON object. Inserts go through ``LongTermMemory.store_many`` in
batches (``--batch``, embedding included); retrieval latency is measured per
``retrieve(query, top_k=5)`` call, query embedding and the access-count update
included, over varied synthetic queries after a short warm-up.

    python bench/memory.py              # 10,000 memories
    python bench/memory.py --n 100000   # takes several minutes
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from jarvis.memory.embedding import make_embedding
from jarvis.memory.long_term import LongTermMemory, Memory, MemoryType

APPS = "Firefox Chrome Thunderbird LibreOffice GIMP Inkscape VLC Slack Zoom Terminal Nautilus Gedit"
OBJECTS = (
    "invoice report spreadsheet photo playlist calendar meeting ticket password wallpaper "
    "font printer folder archive screenshot contract budget recipe flight hotel receipt"
)
VERBS = "open save export rename print share delete search download upload"
ADJ = "dark light large small quarterly monthly weekly urgent private shared old new blue red"
PEOPLE = "Anna Ben Chen Dana Emil Fatima Georg Hana Ivan Julia Karim Lena Marco Nora Omar"
TEMPLATES: dict[MemoryType, list[str]] = {
    "history": [
        "{person} asked me to {verb} the {adj} {obj} in {app}; it worked after {n} steps.",
        "Task: {verb} the {obj} for {person}. Used {app}, finished in {n} steps.",
        "I {did} {n} {adj} {obj}s with {app} and sent them to {person}.",
    ],
    "skill": [
        "To {verb} a {obj} in {app}, use the File menu and press ctrl+{key}.",
        "In {app} the {adj} {obj} panel opens with ctrl+shift+{key}.",
    ],
    "preference": [
        "{person} prefers a {adj} theme in {app} and the {obj} in the sidebar.",
        "Always {verb} {obj}s as PDF before sending them to {person}.",
    ],
}
QUERIES = [
    "How do I {verb} a {obj} in {app}?",
    "What does {person} prefer for the {obj}?",
    "{adj} {obj} from {person}",
    "Did I ever {verb} a {obj} with {app}?",
]


def fill(template: str, rng: random.Random) -> str:
    verb = rng.choice(VERBS.split())
    return template.format(
        person=rng.choice(PEOPLE.split()),
        verb=verb,
        did=verb + ("d" if verb.endswith("e") else "ed"),
        adj=rng.choice(ADJ.split()),
        obj=rng.choice(OBJECTS.split()),
        app=rng.choice(APPS.split()),
        key=rng.choice("abcdefghijklmnopqrstuvwxyz"),
        n=rng.randint(2, 30),
    )


def synthetic(n: int, rng: random.Random) -> list[Memory]:
    kinds: list[MemoryType] = rng.choices(["history", "skill", "preference"], [85, 10, 5], k=n)
    return [
        Memory(
            type=kind,
            content=fill(rng.choice(TEMPLATES[kind]), rng),
            importance=round(rng.uniform(0, 10), 1),
            task_ids=[f"T{rng.randint(1, 9999):04d}"] if kind == "history" else [],
        )
        for kind in kinds
    ]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories to insert")
    parser.add_argument("--batch", type=int, default=1_000, help="memories per store_many call")
    parser.add_argument("--queries", type=int, default=300, help="timed retrievals")
    parser.add_argument("--dir", type=Path, help="keep the store here (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    root = args.dir or Path(tempfile.mkdtemp(prefix="jarvis-bench-memory-"))
    embedding = make_embedding(object())
    memories = synthetic(args.n, rng)
    try:
        with LongTermMemory(root / "long_term", embedding) as ltm:
            started = time.perf_counter()
            for start in range(0, len(memories), args.batch):
                ltm.store_many(memories[start : start + args.batch])
            insert_s = time.perf_counter() - started

            queries = [fill(rng.choice(QUERIES), rng) for _ in range(args.queries + 10)]
            for query in queries[:10]:
                ltm.retrieve(query, top_k=5)
            retrieve_ms, readonly_ms, embed_ms = [], [], []
            for query in queries[10:]:
                t0 = time.perf_counter()
                hits = ltm.retrieve(query, top_k=5)
                t1 = time.perf_counter()
                ltm.retrieve(query, top_k=5, touch=False)
                t2 = time.perf_counter()
                embedding.function([query])
                t3 = time.perf_counter()
                assert len(hits) == 5
                retrieve_ms.append((t1 - t0) * 1000)
                readonly_ms.append((t2 - t1) * 1000)
                embed_ms.append((t3 - t2) * 1000)
            count = ltm.count()
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)

    print(
        json.dumps(
            {
                "benchmark": "long_term_memory",
                "memories": count,
                "embedding": embedding.key,
                "insert_batch": args.batch,
                "insert_seconds": round(insert_s, 2),
                "insert_per_second": round(args.n / insert_s, 1),
                "queries": args.queries,
                "retrieve_top5_p50_ms": round(statistics.median(retrieve_ms), 2),
                "retrieve_top5_p95_ms": round(percentile(retrieve_ms, 95), 2),
                "retrieve_top5_no_touch_p50_ms": round(statistics.median(readonly_ms), 2),
                "query_embed_p50_ms": round(statistics.median(embed_ms), 2),
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
