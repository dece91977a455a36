"""`jarvis calibrate --serving` against loopback servers answering as vLLM, SGLang,
llama.cpp and Ollama answer (:mod:`tests.serving_shapes`, versions named there): through
the CLI, the factory's provider and the real openai SDK, one line each, the right
verdict and exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jarvis.calibrate.serving import RADIUS, SCREEN, serving_picture, target_centre
from jarvis.cli import main
from tests import serving_shapes as shapes
from tests.agent_harness import TEST_KEY
from tests.serving_shapes import ServingServer, Shape

LANDED = "parsed and landed"
CASES = [
    (shapes.VLLM_HERMES, 0, ["vLLM 0.19.0", LANDED, "no quirks"]),
    (shapes.VLLM_XML_THINK, 0, ["vLLM 0.19.0", LANDED, "call found only inside reasoning",
                                "tool calls came back empty with tool_choice=required"]),
    (shapes.VLLM_NO_PARSER, 0, [LANDED, "vLLM without --enable-auto-tool-choice "
                                "--tool-call-parser: read from text"]),
    (shapes.SGLANG_QWEN25, 1, ["SGLang 0.5.3", "not parsed: the answer was empty",
                               "SGLang's tool parser (qwen25) dropped the call"]),
    (shapes.SGLANG_PLAIN, 0, ["SGLang 0.5.3", LANDED,
                              "the server gave no tool_calls: read from text"]),
    (shapes.LLAMA_NO_JINJA, 0, ["llama.cpp b6710-74b8fc17", LANDED,
                                "llama.cpp without --jinja: read from text"]),
    (shapes.LLAMA_NO_MMPROJ, 2, ["llama.cpp b6710-74b8fc17",
                                 "not answered: OpenAI HTTP 500: image input is not supported",
                                 "--mmproj", "quirks: image not accepted"]),
    (shapes.OLLAMA_NO_TOOLS, 0, ["Ollama 0.12.6", LANDED,
                                 "server has no tool template: read from text"]),
]  # fmt: skip


def run_serving(
    server: ServingServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> tuple[int, str]:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("JARVIS_MAX_RETRIES", "0")
    argv = ["calibrate", "--serving", "--data-dir", str(tmp_path / "data"),
            "--provider", "openai", "--model", "Qwen3-VL-8B-Instruct"]  # fmt: skip
    code = main(argv)
    return code, capsys.readouterr().out


@pytest.mark.parametrize(("shape", "exit_code", "said"), CASES, ids=[c[0].name for c in CASES])
def test_one_line_verdict_per_server_shape(
    shape: Shape,
    exit_code: int,
    said: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: Any,
) -> None:
    with ServingServer(shape) as server:
        code, out = run_serving(server, monkeypatch, tmp_path, capsys)
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    line = lines[0]
    assert line.startswith("serving: ") and "profile qwen3-vl" in line, line
    for piece in said:
        assert piece in line, (piece, line)
    assert code == exit_code, line
    first = server.requests[0]
    assert "tool_choice" not in first  # Jarvis never relies on it
    assert TEST_KEY not in line


def test_the_required_probe_is_the_one_request_that_sends_tool_choice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    with ServingServer(shapes.VLLM_XML_THINK) as server:
        run_serving(server, monkeypatch, tmp_path, capsys)
    choices = [body.get("tool_choice") for body in server.requests]
    assert choices == [None, "required"]
    names = [[t["function"]["name"] for t in body["tools"]] for body in server.requests]
    assert names[0] == names[1] and names[0][0] == "computer_use"  # the same request
    assert "/version" in server.gets  # the version came from vLLM's own endpoint


def test_a_server_that_drops_tools_is_asked_again_as_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    with ServingServer(shapes.LLAMA_NO_JINJA) as server:
        code, _ = run_serving(server, monkeypatch, tmp_path, capsys)
    assert code == 0
    assert [bool(b.get("tools")) for b in server.requests] == [True, False]
    assert "<tool_call>" in server.requests[1]["messages"][0]["content"]  # the text protocol


def test_a_click_far_from_the_target_is_a_miss(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    def far_click(body: dict[str, Any]) -> shapes.Answer:
        return shapes.Answer([{"role": "assistant", "content": '<tool_call>{"name": '
                               '"computer_use", "arguments": {"action": "left_click", '
                               '"coordinate": [100, 900]}}</tool_call>'}])  # fmt: skip

    shape = Shape("vllm-far", shapes.VLLM, shapes.UVICORN, far_click)
    with ServingServer(shape) as server:
        code, out = run_serving(server, monkeypatch, tmp_path, capsys)
    assert code == 1, out
    assert "parsed and missed" in out and f"(tolerance {RADIUS})" in out


def test_the_picture_has_its_one_target_where_the_verdict_looks() -> None:
    image = serving_picture(SCREEN)
    x, y = target_centre(SCREEN)
    assert image.size == (SCREEN.width, SCREEN.height)
    assert image.getpixel((x - RADIUS + 4, y)) == shapes.RED
    assert image.getpixel((x + 3 * RADIUS, y)) != shapes.RED


def test_serving_needs_an_openai_compatible_provider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    code = main(["calibrate", "--serving", "--data-dir", str(tmp_path / "data"),
                 "--provider", "anthropic", "--model", "claude-sonnet-4-5"])  # fmt: skip
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 2 and len(out) == 1
    assert "OpenAI-compatible server" in out[0]


def test_json_is_one_object_with_the_same_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    with ServingServer(shapes.OLLAMA_NO_TOOLS) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["calibrate", "--serving", "--json", "--data-dir", str(tmp_path / "d"),
                     "--provider", "openai", "--model", "Qwen3-VL-8B-Instruct"])  # fmt: skip
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    report = json.loads(out[0])
    assert (report["server"], report["version"]) == ("Ollama", "0.12.6")
    assert report["parsed"] is True and report["landed"] is True
    assert report["distance_px"] <= 2 and report["tolerance_px"] == RADIUS
    assert report["quirks"] == ["server has no tool template: read from text"]
