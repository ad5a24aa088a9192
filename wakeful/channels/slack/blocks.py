"""Block Kit for approval notices: the text, then Approve and Deny buttons.

A button's ``action_id`` says what it does and its ``value`` which approval;
both come back in the ``block_actions`` payload of a press. Once decided, the
message is rewritten as the same text with the decision that stands under
it, and no buttons.
"""

from __future__ import annotations

from typing import Any

from wakeful.channels.slack.mrkdwn import escape

# A section's text may hold at most 3,000 characters.
MAX_SECTION_CHARS = 3_000
ACTIONS = ("approve", "deny")


def _section(mrkdwn: str) -> dict[str, Any]:
    if len(mrkdwn) > MAX_SECTION_CHARS:
        mrkdwn = mrkdwn[: MAX_SECTION_CHARS - 1] + "…"
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}}


def approval_blocks(mrkdwn: str, approval_id: str) -> list[dict[str, Any]]:
    """The notice (already mrkdwn) and its two buttons."""
    return [
        _section(mrkdwn),
        {
            "type": "actions",
            "block_id": f"approval:{approval_id}",
            "elements": [
                {
                    "type": "button",
                    "action_id": "approve",
                    "text": {"type": "plain_text", "text": "Approve"},
                    "style": "primary",
                    "value": approval_id,
                },
                {
                    "type": "button",
                    "action_id": "deny",
                    "text": {"type": "plain_text", "text": "Deny"},
                    "style": "danger",
                    "value": approval_id,
                },
            ],
        },
    ]


def decided_blocks(mrkdwn: str, standing: str) -> list[dict[str, Any]]:
    """The notice with the decision under it in place of the buttons."""
    return [
        _section(mrkdwn),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": escape(standing)}]},
    ]
