"""Build the configured provider once per run (never per step), as its profile asks.

Only the chosen provider's module (and so its SDK) is imported: the SDKs take seconds to
load on a busy machine, and a run needs one of them."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import TYPE_CHECKING

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.llm.base import AdapterBase, Connection
from jarvis.llm.profiles.adapter import GRAMMAR_FORMATS, ProfileProvider
from jarvis.llm.profiles.catalog import Profile
from jarvis.llm.profiles.select import active_profile
from jarvis.llm.retry import RetryPolicy

if TYPE_CHECKING:
    from jarvis.llm.openai_actions import Approver

log = logging.getLogger(__name__)


def make_provider(
    settings: Settings,
    bus: EventBus | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    retry: RetryPolicy | None = None,
    approve: Approver | None = None,
) -> AdapterBase | ProfileProvider:
    """The provider ``settings.provider`` names, with its model, timeout and retries,
    speaking the model profile's action format (said in the log at the start of a run).

    Keys and base URLs come from the SDKs' env vars (ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL, GEMINI_API_KEY, GEMINI_BASE_URL)
    unless given here. Gemini's computer-use profile (api ``gemini``) or ``provider:
    "gemini"`` speaks the Gemini API; its computer-use tool only with that profile.
    ``approve`` answers OpenAI's safety checks and Gemini's safety decisions (default:
    nobody is there, they are denied).
    Raises ProviderAuthError when there is no key, naming the variable to set.
    """
    profile = _profile(settings)
    connection: Connection = {
        "api_key": api_key,
        "base_url": base_url,
        "bus": bus,
        "retry": retry or RetryPolicy(max_retries=settings.max_retries),
        "timeout_s": settings.request_timeout_s,
        "text_tool_calls": profile.text_tool_calls,
    }
    inner: AdapterBase
    if settings.provider == "anthropic":
        from jarvis.llm.anthropic import AnthropicProvider

        inner = AnthropicProvider(
            settings.model,
            native_computer_tool=settings.native_computer_tool,
            computer_tool_version=settings.computer_tool_version,
            **connection,
        )
    elif profile.api == "gemini" or settings.provider == "gemini":
        from jarvis.llm.gemini import GeminiProvider

        return GeminiProvider(
            settings.active_model,
            computer_use=profile.action_format == "gemini-computer",
            space=profile.space,
            approve=approve,
            **connection,
        )
    elif profile.api == "openai-responses":
        from jarvis.llm.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(settings.openai_model, approve=approve, **connection)
    else:
        from jarvis.llm.openai import OpenAIProvider

        inner = OpenAIProvider(settings.openai_model, served=profile.served_calls, **connection)
    if profile.action_format in GRAMMAR_FORMATS:
        return ProfileProvider(inner, profile)
    return inner


def sdk_name(settings: Settings) -> str:
    """The SDK package :func:`make_provider` imports for ``settings``."""
    if settings.provider == "anthropic":
        return "anthropic"
    if settings.provider == "gemini" or active_profile(settings).profile.api == "gemini":
        return "google.genai"
    return "openai"


AIOHTTP_TRANSPORTS = {
    "anthropic": "anthropic._vendor.httpx_aiohttp",
    "openai": "openai._vendor.httpx_aiohttp",
}
"""The SDKs' optional aiohttp transport (their ``DefaultAioHttpClient``). They import it
whenever aiohttp is installed (chromadb and google-genai bring it), aiohttp with it: 0.25 to
0.3 s of CPU before a run's first request. Jarvis never uses it (the SDKs' default httpx
transport carries every request), so :func:`preload_sdk` marks it missing before the SDK
loads: the SDK's own path for an install without its ``aiohttp`` extra."""


def preload_sdk(settings: Settings) -> threading.Thread:
    """Start importing the chosen provider's SDK in a thread (seconds on a busy machine),
    so that time passes while the run opens its desktop rather than after. The import in
    :func:`make_provider` waits for this one where it is not done yet; an import that fails
    here is left for that one to report. The SDK's aiohttp transport is left out
    (:data:`AIOHTTP_TRANSPORTS`)."""
    name = sdk_name(settings)
    if name in AIOHTTP_TRANSPORTS and name not in sys.modules:
        sys.modules.setdefault(AIOHTTP_TRANSPORTS[name], None)  # type: ignore[arg-type]

    def load() -> None:
        try:
            importlib.import_module(name)
        except Exception as exc:  # said by make_provider's own import, on the run's path
            log.debug("importing %s ahead failed: %s", name, exc)

    thread = threading.Thread(target=load, name=f"import {name}", daemon=True)
    thread.start()
    return thread


def _profile(settings: Settings) -> Profile:
    """The model's profile, said in the log (with the choice's warning, if any)."""
    choice = active_profile(settings)
    profile = choice.profile
    if choice.warning:
        log.warning("%s", choice.warning)
    log.info(
        "model %s: profile %s (%s; %s, %s)",
        settings.active_model,
        profile.name,
        choice.reason,
        profile.action_format,
        profile.space.describe(),
    )
    return profile
