"""Build the configured provider once per run (never per step)."""

from __future__ import annotations

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import AdapterBase
from jarvis.llm.openai import OpenAIProvider
from jarvis.llm.retry import RetryPolicy


def make_provider(
    settings: Settings,
    bus: EventBus | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    retry: RetryPolicy | None = None,
) -> AdapterBase:
    """The provider ``settings.provider`` names, with its model, timeout and retries.

    Keys and base URLs come from the SDKs' env vars (ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL) unless given here.
    Raises ProviderAuthError when there is no key, naming the variable to set.
    """
    policy = retry or RetryPolicy(max_retries=settings.max_retries)
    if settings.provider == "anthropic":
        return AnthropicProvider(
            settings.model,
            api_key=api_key,
            base_url=base_url,
            bus=bus,
            retry=policy,
            timeout_s=settings.request_timeout_s,
            native_computer_tool=settings.native_computer_tool,
        )
    return OpenAIProvider(
        settings.openai_model,
        api_key=api_key,
        base_url=base_url,
        bus=bus,
        retry=policy,
        timeout_s=settings.request_timeout_s,
    )
