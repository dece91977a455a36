"""mcp.json parsing, SERVER__TOOL names, `jarvis mcp list`, the doctor's MCP and skills
checks, and the per-provider and per-channel policy decision."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.config import Settings
from jarvis.doctor import check_mcp, check_skills
from jarvis.tools.mcp_config import load_mcp_config, tool_name
from jarvis.tools.policy import Policy
from jarvis.tools.policy_settings import ToolPolicy, ToolPolicyOverride
from jarvis.tools.toolbox_settings import ChannelPolicy
from tests.mcp_fixtures import mcp_settings, stdio_entry, write_mcp_json

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("files", "read", "files__read"),
        ("files", "read-file_2", "files__read-file_2"),
        ("files", "read.file", None),
        ("cal", "événement créé", None),
        ("s", "x" * 80, None),
        ("server-with-a-long-name", "and_a_tool_with_an_even_longer_name_than_that", None),
    ],
)
def test_tool_names_fit_the_providers_pattern(server: str, tool: str, expected: str | None) -> None:
    name = tool_name(server, tool)
    assert NAME.match(name), name
    assert name == tool_name(server, tool)  # deterministic
    if expected is not None:
        assert name == expected
    else:
        assert name.startswith(server[:20]) and len(name) <= 64
    assert tool_name(server, tool + "x") != name


def test_names_that_clean_up_alike_stay_apart() -> None:
    assert tool_name("s", "a.b") != tool_name("s", "a_b") == "s__a_b"
    assert tool_name("s", "a.b") != tool_name("s", "a b")


def test_mcp_json_entries_and_problems(tmp_path: Path) -> None:
    path = write_mcp_json(
        tmp_path,
        {
            "files": {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "s3cret-xyz"}},
            "cal": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "B x"}},
            "old": {"url": "http://127.0.0.1:9/sse"},
            "typed": {"url": "http://127.0.0.1:9/events", "type": "sse", "autoApprove": ["x"]},
            "off": {"command": "x", "disabled": True},
            "both": {"command": "x", "url": "http://a"},
            "neither": {"args": []},
            "ftp": {"url": "ftp://example.com"},
            "bad__name": {"command": "x"},
            "slow": {"command": "x", "timeout": -1},
        },
    )
    config = load_mcp_config(path)
    assert sorted(config.servers) == ["cal", "files", "old", "typed"]
    kinds = {n: s.transport for n, s in config.servers.items()}
    assert kinds == {"files": "stdio", "cal": "http", "old": "sse", "typed": "sse"}
    assert "s3cret" not in config.servers["files"].describe()
    assert "B x" not in config.servers["cal"].describe()
    problems = "\n".join(config.problems)
    for name in ("both", "neither", "ftp", "bad__name", "slow"):
        assert f"'{name}'" in problems, name
    assert len(config.problems) == 5

    path.write_text("{not json")
    assert load_mcp_config(path).problems[0].startswith(f"{path}: cannot be read as JSON")
    path.write_text(json.dumps({"servers": {}}))
    assert "needs an object 'mcpServers'" in load_mcp_config(path).problems[0]
    assert load_mcp_config(tmp_path / "missing.json").servers == {}


def test_jarvis_mcp_list_shows_servers_states_and_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    entry = stdio_entry(tmp_path / "starts.txt")
    entry["env"]["API_TOKEN"] = "tok-must-not-print"
    write_mcp_json(data, {"demo": entry, "broken": {"command": str(tmp_path / "no-such")}})
    (data / "config" / "settings.json").write_text(
        json.dumps({"toolbox": {"mcp": {"start_timeout_s": 20, "restart_backoff_s": 5}}})
    )
    assert main(["mcp", "list", "--data-dir", str(data)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^demo  ready  \[.*demo_server stdio\]$", out, re.M)
    assert "    demo__echo\n" in out and "    demo__picture\n" in out
    assert re.search(r"^broken  down: FileNotFoundError", out, re.M)
    assert "tok-must-not-print" not in out

    assert main(["mcp", "list", "--json", "--data-dir", str(data)]) == 1
    listed = json.loads(capsys.readouterr().out)
    states = {s["name"]: (s["state"], len(s["tools"])) for s in listed["servers"]}
    assert states == {"demo": ("ready", 9), "broken": ("down", 0)}


def test_doctor_checks_each_server_and_names_broken_skills(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = mcp_settings(data)
    assert check_mcp(settings).ok and "no MCP servers" in check_mcp(settings).detail
    write_mcp_json(data, {"demo": stdio_entry(tmp_path / "s.txt")})
    good = check_mcp(mcp_settings(data))
    assert good.ok and good.detail == "demo: 9 tool(s)"
    write_mcp_json(data, {"demo": stdio_entry(tmp_path / "s.txt"), "gone": {"command": "/nope"}})
    bad = check_mcp(mcp_settings(data, restart_backoff_s=5))
    assert not bad.ok and "demo: 9 tool(s)" in bad.detail and "gone: down" in bad.detail

    skills = Settings(data_dir=data)
    (data / "skills").mkdir()
    assert check_skills(skills).ok
    (data / "skills" / "broken_skill.py").write_text("import no_such_module_here\n")
    broken = check_skills(skills)
    assert not broken.ok and "broken_skill.py" in broken.detail
    assert "ModuleNotFoundError" in broken.detail


POLICY = ToolPolicy(
    deny=["drag"],
    per_provider={"openai": ToolPolicyOverride(deny=["web_fetch"])},
    per_channel={
        "api": ChannelPolicy(allow=["click", "read_file", "web_fetch", "mcp__echo"]),
        "kiosk": ChannelPolicy(deny=["mcp__echo"], web_hosts=["example.com"]),
    },
)


@pytest.mark.parametrize(
    ("tool", "provider", "channels", "reason"),
    [
        ("click", "anthropic", (), None),
        ("drag", "anthropic", (), "denied by policy"),
        ("web_fetch", "openai", (), "denied by policy for provider 'openai'"),
        ("web_fetch", "anthropic", ("api",), None),
        ("write_file", "anthropic", ("tui",), None),
        ("write_file", "anthropic", ("email",), "denied by policy for tasks from channel 'email'"),
        ("write_file", "anthropic", ("api",), "not in the allow list for tasks from channel 'api'"),
        ("mcp__echo", "anthropic", ("api",), None),
        ("mcp__echo", "anthropic", ("api", "kiosk"), "channel 'kiosk'"),
        ("read_file", "anthropic", ("inbox", "email"), None),
        ("drag", "anthropic", ("api",), "denied by policy"),
    ],
)
def test_the_one_policy_decision(
    tool: str, provider: str, channels: tuple[str, ...], reason: str | None
) -> None:
    decided = Policy(POLICY).deny_reason(tool, provider, (), channels)
    if reason is None:
        assert decided is None
    else:
        assert decided is not None and reason in decided


def test_channel_web_hosts_and_read_only() -> None:
    policy = Policy(POLICY)
    assert policy.web_hosts(()) is None
    assert policy.web_hosts(("tui",)) is None
    assert policy.web_hosts(("email",)) == []
    assert policy.web_hosts(("kiosk",)) == ["example.com"]
    assert policy.web_hosts(("kiosk", "email")) == []
    assert policy.workspace_read_only(("email",)) and not policy.workspace_read_only(("tui",))
    opened = Policy(ToolPolicy(per_channel={"email": ChannelPolicy(web_hosts=["a.org"])}))
    assert opened.web_hosts(("email",)) == ["a.org"]
    assert opened.deny_reason("write_file", None, (), ("email",)) is None  # named explicitly


def test_schema_tools_with_bad_or_remote_schemas_are_not_offered(tmp_path: Path) -> None:
    import asyncio

    from jarvis.tools.context import ToolContext
    from jarvis.tools.registry import ToolRegistry
    from jarvis.tools.results import INVALID_PARAMS

    registry = ToolRegistry(Settings(data_dir=tmp_path))

    async def fn(args: dict, ctx: ToolContext) -> dict:
        return args

    with pytest.raises(ValueError, match="invalid input schema"):
        registry.register_schema(
            "bad", fn, {"type": "object", "minProperties": -1}, "d", origin="x"
        )
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}
    with pytest.raises(ValueError, match="refers outside itself"):
        registry.register_schema("remote", fn, remote, "d", origin="x")
    local = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/small"}},
        "$defs": {"small": {"type": "integer", "maximum": 3}},
    }
    registry.register_schema("local", fn, local, "d", origin="x")
    ctx = ToolContext.for_task(Settings(data_dir=tmp_path), "t")
    assert asyncio.run(registry.execute("local", {"a": 2}, ctx)).data == {"a": 2}
    refused = asyncio.run(registry.execute("local", {"a": 9}, ctx))
    assert refused.error is not None and refused.error.code == INVALID_PARAMS
    assert refused.error.message == "a: 9 is greater than the maximum of 3"
    assert registry.names == ["local"]
