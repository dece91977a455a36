"""The Agent Card (public, by the protocol) and the extended card (behind the token).

Skills: desktop tasks, and one per installed preset (``presets.json``) and per skill file
in the skills folder (read with ``ast``: the card never runs a skill's code).
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from jarvis import __version__
from jarvis.config import Settings
from jarvis.tools.presets import PresetError, load_default_presets

log = logging.getLogger(__name__)

RPC_PATH = "/a2a"
SCHEME = "bearer"
DAEMON_EXTENSION = "urn:jarvis:daemon"
"""The extended card's extension whose params name the provider, model and model profile."""
INPUT_MODES = ["text/plain"]
OUTPUT_MODES = ["text/plain", "image/jpeg", "image/png", "text/html"]
DESCRIPTION = (
    "Jarvis, a desktop computer-use agent: it looks at a Linux desktop and uses the mouse "
    "and keyboard to do a task, then reports what it did with the final screenshot. Each "
    "message is its own task; a call it may not make alone waits for a person's approval."
)


def _skill(
    skill_id: str, name: str, description: str, examples: list[str], tags: list[str]
) -> AgentSkill:
    return AgentSkill(
        id=skill_id,
        name=name,
        description=description or name,
        tags=tags,
        examples=examples,
        input_modes=INPUT_MODES,
        output_modes=OUTPUT_MODES,
    )


def preset_skills(settings: Settings) -> list[AgentSkill]:
    try:
        presets = load_default_presets(settings)
    except (PresetError, OSError, ValueError) as exc:
        log.warning("agent card: presets left out: %s", exc)
        return []
    return [
        _skill(
            f"preset:{p.name}",
            p.name,
            p.description,
            [f"Use {p.name}: {p.description}"],
            ["preset", "desktop"],
        )
        for p in presets
    ]


def skill_folder(settings: Settings) -> Path:
    configured = settings.toolbox.skills.dir
    if configured is None:
        return settings.data_dir / "skills"
    return configured if configured.is_absolute() else settings.data_dir / configured


def file_skills(settings: Settings) -> list[AgentSkill]:
    """One skill per ``@skill_tool`` function in ``*_skill.py`` files (parsed, not run)."""
    out: list[AgentSkill] = []
    folder = skill_folder(settings)
    for path in sorted(folder.glob("*_skill.py")) if folder.is_dir() else []:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (OSError, SyntaxError, ValueError) as exc:
            log.warning("agent card: %s left out: %s", path.name, exc)
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_skill(node):
                doc = (ast.get_docstring(node) or "").strip().splitlines()
                text = doc[0] if doc else node.name
                out.append(
                    _skill(
                        f"skill:{node.name}",
                        node.name,
                        text,
                        [f"Use {node.name} to: {text}"],
                        ["skill"],
                    )
                )
    return out


def _is_skill(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "skill_tool":
            return True
    return False


def agent_card(settings: Settings, base_url: str, *, extended: bool = False) -> AgentCard:
    """The card for a server reached at ``base_url`` (scheme://host:port, no slash)."""
    desktop = _skill(
        "desktop-task",
        "Desktop task",
        "Do a task on the desktop with the mouse and keyboard; answers with a summary, the "
        "final screenshot and a report. It may ask a question (input-required) or wait for a "
        "person's approval (auth-required).",
        ["Open the text editor and write 'hello'", "Find the PDF in Downloads and open it"],
        ["desktop", "computer-use"],
    )
    card = AgentCard(
        name="Jarvis",
        description=DESCRIPTION,
        version=__version__,
        supported_interfaces=[
            AgentInterface(
                url=base_url + RPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=False, extended_agent_card=True
        ),
        security_schemes={
            SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="the daemon's token, from DATA/config/api_token",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList(list=[])})],
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=[desktop, *preset_skills(settings), *file_skills(settings)],
    )
    if extended:
        daemon = {
            "provider": settings.provider,
            "model": settings.active_model,
            "profile": _profile(settings),
        }
        card.capabilities.extensions.append(
            AgentExtension(uri=DAEMON_EXTENSION, description="the daemon's model", params=daemon)
        )
    return card


def _profile(settings: Settings) -> str:
    from jarvis.llm.profiles.catalog import choose_profile

    try:
        return choose_profile(settings.active_model, settings.model_profile).profile.name
    except (ValueError, KeyError) as exc:
        return f"unknown ({exc})"
