"""``jarvis replay --model``: ask the model where a recorded target is now.

One call with the current screenshot and the recorded crop; the model answers with the
``point`` tool (a pixel in the screenshot) or ``not_found``. Its answer is checked like
any other placement (inside the screen, the recorded window under it) before the replay
acts on it.
"""

from __future__ import annotations

import io
import logging

from PIL import Image

from jarvis import prompts
from jarvis.config import Settings
from jarvis.desktop.screen import Observation
from jarvis.llm.base import Provider, ProviderError, complete
from jarvis.llm.pricing import cost_usd
from jarvis.llm.types import ImagePart, LLMRequest, Message, ToolSpec
from jarvis.runs.placement import Stop
from jarvis.runs.step_file import CallFile
from jarvis.safety import budget
from jarvis.usage import Usage

log = logging.getLogger(__name__)

POINT = ToolSpec(
    name="point",
    description="The pixel at the centre of the element on the current screenshot.",
    parameters={
        "type": "object",
        "properties": {
            "x": {"type": "integer", "minimum": 0},
            "y": {"type": "integer", "minimum": 0},
        },
        "required": ["x", "y"],
        "additionalProperties": False,
    },
)
NOT_FOUND = ToolSpec(
    name="not_found",
    description="The element is not on the screen, or you are not sure.",
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
        "additionalProperties": False,
    },
)


class ModelRegrounder:
    def __init__(self, provider: Provider, settings: Settings) -> None:
        self.provider = provider
        self.settings = settings
        self.usage = Usage()
        """What the replay's model calls have used: the budget of a live task holds."""

    async def locate(
        self, observation: Observation, crop: Image.Image, call: CallFile
    ) -> tuple[int, int] | None:
        used = budget.spent(self.usage, cost_usd(self.settings.active_model, self.usage))
        over = budget.exceeded(used, self.settings.safety)
        if over is not None:  # no call past the budget
            raise Stop(f"the replay {over}")
        size = observation.model_size
        x, y = call.model_points[0]
        text = prompts.render(
            "reground", width=size.width, height=size.height, tool=call.name, x=x, y=y
        )
        buf = io.BytesIO()
        crop.save(buf, "PNG")
        request = LLMRequest(
            system=prompts.render_text("reground_system"),
            messages=[
                Message.user(
                    ImagePart.from_bytes(observation.data, observation.media_type),
                    ImagePart.from_bytes(buf.getvalue(), "image/png"),
                    text,
                )
            ],
            tools=[POINT, NOT_FOUND],
            max_tokens=512,
            tool_mode=self.settings.tool_mode,
        )
        try:
            response = await complete(self.provider, request)
        except ProviderError as exc:
            log.warning("the model could not re-ground %s: %s", call.name, exc)
            return None
        self.usage = self.usage + response.usage
        for tool_call in response.tool_calls:
            if tool_call.name == "point":
                try:
                    px, py = int(tool_call.arguments["x"]), int(tool_call.arguments["y"])
                except (KeyError, TypeError, ValueError):
                    return None
                if 0 <= px < size.width and 0 <= py < size.height:
                    return px, py
                return None
            if tool_call.name == "not_found":
                log.info("the model did not find the target: %s", tool_call.arguments.get("reason"))
                return None
        return None
