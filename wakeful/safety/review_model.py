"""The optional model reviewer's model: ``[safety] reviewer_model`` on the daemon's provider.

It is asked one question — the call's structured fields as JSON, and the
owner's system prompt as the owner's instructions — and must answer with a
JSON verdict. Anything else is "ask": a reviewer that cannot be understood
never lets a call through.
"""

from __future__ import annotations

import json
import re

from wakeful.core.provider import ModelProvider, ModelRequest
from wakeful.safety.reviewer_step import REVIEW_INSTRUCTIONS

_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


class ProviderReviewModel:
    def __init__(self, provider: ModelProvider, model: str, owner_instructions: str) -> None:
        self._provider = provider
        self._model = model
        self._owner = owner_instructions

    async def review(self, question: str) -> tuple[str, str]:
        system = f"{REVIEW_INSTRUCTIONS}\nThe owner's instructions to the agent: {self._owner}"
        response = await self._provider.complete(
            ModelRequest(
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": question},
                ],
                model=self._model,
                max_tokens=200,
            )
        )
        return parse_verdict(response.content)


def parse_verdict(text: str) -> tuple[str, str]:
    """("allow" | "ask" | "deny", reason); unparseable answers are "ask"."""
    match = _JSON_OBJECT.search(text or "")
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("verdict") not in ("allow", "ask", "deny"):
        return "ask", f"the reviewer's answer could not be read: {text[:200]!r}"
    return str(data["verdict"]), str(data.get("reason") or "no reason given")
