"""One settings object for all of Jarvis.

Precedence, lowest first: field defaults, ``DATA_DIR/config/settings.json``,
``JARVIS_*`` environment variables, then CLI flags (passed as overrides).
Nested fields take ``__`` in env names, e.g. ``JARVIS_TOOLS__DENY='["drag"]'``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from jarvis.api.settings import ApiSettings
from jarvis.desktop.settings import DesktopSettings
from jarvis.fleet.settings import FleetSettings
from jarvis.gateway.channels.email.settings import EmailSettings
from jarvis.gateway.settings import InboxSettings, RouterSettings, TodosSettings
from jarvis.llm.grounder_settings import GrounderSettings
from jarvis.llm.profiles.settings import by_name, match, profile_specs
from jarvis.runs.settings import RunsSettings
from jarvis.safety.channel_policy import (
    ChannelSettings,
    check_blocks,
    fold_legacy,
    legacy_warnings,
)
from jarvis.safety.settings import SafetySettings
from jarvis.safety.takeover_settings import TakeoverSettings
from jarvis.tools.policy_settings import ToolPolicy
from jarvis.tools.toolbox_settings import ToolboxSettings
from jarvis.tui.settings import TuiSettings

log = logging.getLogger(__name__)

SETTINGS_FILE = Path("config") / "settings.json"
DEFAULT_DATA_DIR = Path("data")

ProviderName = Literal["anthropic", "openai", "gemini"]
PROVIDERS: tuple[ProviderName, ...] = get_args(ProviderName)
"""Every provider Jarvis has: the choices of every command's ``--provider``."""
MODEL_FIELDS: dict[ProviderName, str] = {
    "anthropic": "model",
    "openai": "openai_model",
    "gemini": "gemini_model",
}
"""The settings field that holds each provider's model."""
ToolMode = Literal["native", "text", "auto"]


class ConfigError(Exception):
    """A settings source could not be read; the message names the file and the field."""


class Settings(BaseSettings):
    """Everything configurable. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="JARVIS_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = DEFAULT_DATA_DIR

    # model
    provider: ProviderName = "anthropic"
    model: str = "claude-sonnet-4-6"
    openai_model: str = "gpt-4.1"
    gemini_model: str = Field(
        "gemini-2.5-computer-use-preview-10-2025",
        description="the model when provider is gemini (key: GEMINI_API_KEY)",
    )
    max_tokens: int = Field(4096, ge=64)
    temperature: float | None = None
    tool_mode: ToolMode = "auto"
    native_computer_tool: bool = False
    model_profile: str | None = Field(
        None, description="model profile (jarvis.llm.profiles); None: chosen by model name"
    )
    model_profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="profiles added or overridden, keyed by name (fields as in the shipped "
        "jarvis/llm/profiles/profiles.json, plus 'extends'); checked at start",
    )
    grounder: GrounderSettings | None = Field(
        None, description="a grounding model the planner names targets to (click_target)"
    )
    computer_tool_version: Literal["computer_20250124", "computer_20251124"] | None = Field(
        None, description="Claude's computer tool version; None: by model (computer_tool.py)"
    )
    context_policy: Literal["stable", "sliding"] = Field(
        "stable", description="stable: screenshots dropped in chunks (cache-friendly)"
    )
    request_timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(4, ge=0)

    # loop
    max_steps: int = Field(30, ge=1)
    max_tool_calls: int = Field(120, ge=1)
    max_verify_failures: int = Field(2, ge=0)
    max_consecutive_failures: int = Field(3, ge=1)
    recent_steps: int = Field(8, ge=0, description="steps given to the model as text")
    keep_screenshots: int = Field(3, ge=1, description="most recent screenshots kept in context")
    wrap_up_margin: int = Field(2, ge=1, description="steps before the bound to tell the model")

    # desktop backend and screen
    desktop: DesktopSettings = Field(default_factory=DesktopSettings)
    monitor: int = Field(1, ge=0, description="mss monitor index; 1 is the primary")
    max_side: int = Field(1280, ge=64, description="longest side of the model's screenshot")
    image_format: Literal["jpeg", "png"] = "jpeg"
    jpeg_quality: int = Field(80, ge=1, le=100)
    observation: Literal["screenshot", "screenshot+tree", "screenshot+marks"] = Field(
        "screenshot",
        description="what the model sees each step: the screenshot, plus the focused "
        "window's accessibility tree (as text, or as numbered boxes on the screenshot)",
    )
    tree_max_chars: int = Field(6000, ge=200, description="size cap of the tree's text")
    tree_timeout_ms: int = Field(1000, ge=50, description="time limit of one tree read")
    a11y_session_bus: str = Field(
        "", description="session D-Bus address for the tree; empty: the one Jarvis started in"
    )

    # input
    failsafe: bool = True
    type_method: Literal["auto", "xdotool", "clipboard"] = "auto"

    # settle
    settle_floor_ms: int = Field(40, ge=0)
    settle_ceiling_ms: int = Field(3000, ge=1)
    settle_interval_ms: int = Field(20, ge=1)

    # tools
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    presets_file: Path | None = None
    toolbox: ToolboxSettings = Field(default_factory=ToolboxSettings)

    # safety: kill switch, approvals, budget, sandbox (jarvis/safety/settings.py)
    safety: SafetySettings = Field(default_factory=SafetySettings)

    # memory
    short_term_hours: float = Field(12.0, gt=0)
    screenshot_dedup_distance: int = Field(4, ge=0, le=64, description="pHash bits")
    long_term_memory: bool = Field(True, description="recall, remember and learn across tasks")
    memory_top_k: int = Field(5, ge=1, le=50)
    embedding: Literal["minilm-int8", "chroma-default", "onnx-dir"] = "minilm-int8"
    embedding_model_dir: Path | None = None
    memory_forget_threshold: float | None = Field(None, ge=0)
    memory_merge_cosine: float | None = Field(None, gt=0, le=1)
    memory_strength_days: float | None = Field(None, gt=0)

    # control API (jarvis serve)
    api: ApiSettings = Field(default_factory=ApiSettings)

    # live view and takeover (jarvis/safety/takeover.py)
    takeover: TakeoverSettings = Field(default_factory=TakeoverSettings)

    # run records and replay (jarvis/runs/settings.py)
    runs: RunsSettings = Field(default_factory=RunsSettings)

    # channels: one policy block each (jarvis/safety/channel_policy.py)
    channels: dict[str, ChannelSettings] = Field(default_factory=dict)
    email: EmailSettings = Field(default_factory=EmailSettings)

    # the terminal cockpit (jarvis tui)
    tui: TuiSettings = Field(default_factory=TuiSettings)

    # the fleet: many desktops, one queue (jarvis serve --fleet, jarvis worker)
    fleet: FleetSettings = Field(default_factory=FleetSettings)

    # the books at scale: todos.md's ended tasks, the router's candidates (gateway/settings.py)
    todos: TodosSettings = Field(default_factory=TodosSettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    inbox: InboxSettings = Field(default_factory=InboxSettings)

    @field_validator("model_profile")
    @classmethod
    def _no_empty_profile(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("channels")
    @classmethod
    def _channels_narrow(cls, blocks: dict[str, ChannelSettings]) -> dict[str, ChannelSettings]:
        check_blocks(blocks)
        return blocks

    @model_validator(mode="after")
    def _fold_old_channel_keys(self) -> Settings:
        """The old per-channel keys, read for one release, go into ``channels``."""
        self.channels = fold_legacy(
            self.channels,
            per_channel=self.tools.per_channel
            if "per_channel" in self.tools.model_fields_set
            else None,
            approve_per_channel=self.safety.approve_per_channel,
            unattended=self.safety.unattended,
            private_display=self.safety.sandbox.channels,
        )
        return self

    @property
    def legacy_keys(self) -> list[str]:
        """The old per-channel keys these settings still use."""
        used = {
            "tools.per_channel": "per_channel" in self.tools.model_fields_set,
            "safety.approve_per_channel": bool(self.safety.approve_per_channel),
            "safety.unattended": bool(self.safety.unattended),
            "safety.sandbox.channels": bool(self.safety.sandbox.channels),
        }
        return [key for key, on in used.items() if on]

    @field_validator("model_profiles")
    @classmethod
    def _profiles_can_be_right(
        cls, value: dict[str, dict[str, Any]], info: ValidationInfo
    ) -> dict[str, dict[str, Any]]:
        """Every profile can be right (else one line naming the profile and the field)."""
        data_dir = info.data.get("data_dir") or DEFAULT_DATA_DIR
        profile_specs(value, Path(data_dir) / SETTINGS_FILE.parent)
        return value

    @model_validator(mode="after")
    def _known_profiles(self) -> Settings:
        """``model_profile`` names a profile, shipped or from ``model_profiles``."""
        profiles = profile_specs(self.model_profiles, self.profiles_dir)
        if self.model_profile:
            by_name(self.model_profile, profiles)  # raises naming the known ones
        active = match(self.active_model, self.model_profile, profiles)[0]
        if active.action_format == "point":
            raise ValueError(
                f"model: {self.active_model} (profile {active.name}) only points at elements "
                "and cannot act: set it as the grounder (grounder.model) and a planner as model"
            )
        if self.grounder is not None:
            chosen = match(self.grounder.model, self.grounder.profile, profiles)[0]
            if chosen.grounding is None:
                raise ValueError(
                    f"grounder.profile: {chosen.name!r} has no grounding prompt; name a "
                    "grounding profile (gta1, uground, holo1.5, ...) or add one"
                )
        return self

    @property
    def profiles_dir(self) -> Path:
        """Where a profile's relative ``prompt_file`` is read from."""
        return self.data_dir / SETTINGS_FILE.parent

    @property
    def settings_file(self) -> Path:
        return self.data_dir / SETTINGS_FILE

    @property
    def active_model(self) -> str:
        return self.model_for(self.provider)

    def model_for(self, provider: ProviderName) -> str:
        """The model these settings name for ``provider``."""
        model: str = getattr(self, MODEL_FIELDS[provider])
        return model


class _FileSource(PydanticBaseSettingsSource):
    """The values read from settings.json, as the lowest-priority source after defaults."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


def _settings_class(file_values: dict[str, Any]) -> type[Settings]:
    """A Settings subclass whose sources are CLI, env, then this file's values."""

    class _Loaded(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, _FileSource(settings_cls, file_values))

    _Loaded.__name__ = "Settings"
    return _Loaded


def resolve_data_dir(cli_value: str | Path | None = None) -> Path:
    """``--data-dir`` beats ``JARVIS_DATA_DIR`` beats ``./data``."""
    if cli_value:
        return Path(cli_value)
    env = os.environ.get("JARVIS_DATA_DIR")
    return Path(env) if env else DEFAULT_DATA_DIR


def read_settings_file(path: Path) -> dict[str, Any]:
    """Parse settings.json; missing is empty, malformed is a ConfigError naming the file."""
    if not path.exists():
        return {}
    try:
        raw = path.read_bytes()
    except OSError as exc:  # a directory, no permission
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{path}: saved as UTF-16; save it as UTF-8")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data


def _describe(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{source}: field '{field}': {message}")
    return "; ".join(lines)


def model_overrides(
    provider: ProviderName | None, model: str | None, configured: ProviderName
) -> dict[str, str]:
    """The settings a command's ``--provider P --model X`` change, over settings whose
    provider is ``configured``: ``provider`` P, and X in the model field of P (without P,
    of the configured provider). The one rule for every command and every eval run."""
    overrides: dict[str, str] = {}
    if provider is not None:
        overrides["provider"] = provider
    if model:
        overrides[MODEL_FIELDS[provider or configured]] = model
    return overrides


def load_settings(data_dir: str | Path | None = None, **overrides: Any) -> Settings:
    """Build the settings from all sources. ``overrides`` are CLI flags (None means unset)."""
    root = resolve_data_dir(data_dir)
    path = root / SETTINGS_FILE
    file_values = read_settings_file(path)
    file_values.pop("data_dir", None)  # the data dir cannot point at itself
    try:
        Settings.model_validate(file_values | {"data_dir": root}, strict=False)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(path))) from exc

    init = {k: v for k, v in overrides.items() if v is not None}
    init["data_dir"] = root
    try:
        settings = _settings_class(file_values)(**init)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, "environment or command line")) from exc
    for line in legacy_warnings(settings.legacy_keys):
        log.warning("%s", line)
    return settings


def load_chosen(
    data_dir: str | Path | None,
    provider: ProviderName | None,
    model: str | None,
    **overrides: Any,
) -> Settings:
    """:func:`load_settings` with a command's ``--provider`` and ``--model`` applied by
    :func:`model_overrides` (the configured provider read first when only the model is
    given)."""
    configured = provider
    if model and configured is None:
        configured = load_settings(data_dir, **overrides).provider
    chosen = {} if configured is None else model_overrides(provider, model, configured)
    return load_settings(data_dir, **overrides, **chosen)
