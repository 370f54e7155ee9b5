"""Claude Agent SDK message objects -> the stream-json-shaped dicts of `claude -p --output-format
stream-json --verbose`: the raw transcript format skillgrad keeps, parsed by `traces.claude`.
Vendor code, so it lives with the `claude_code_exec` backend (`traces/` reads only plain dicts)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any

from skillgrad.lazy import lazy_import

if TYPE_CHECKING:
    import claude_agent_sdk as sdk
else:
    sdk = lazy_import("claude_agent_sdk")  # loaded on first use

_BLOCK_TYPES = {
    "TextBlock": "text",
    "ThinkingBlock": "thinking",
    "ToolUseBlock": "tool_use",
    "ToolResultBlock": "tool_result",
    "ServerToolUseBlock": "server_tool_use",
    "ServerToolResultBlock": "advisor_tool_result",
}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _block(block: Any) -> dict[str, Any]:
    if not dataclasses.is_dataclass(block) or isinstance(block, type):
        return {"type": "unknown", "repr": repr(block)}
    name = type(block).__name__
    return {"type": _BLOCK_TYPES.get(name, name), **dataclasses.asdict(block)}


def _content(content: Any) -> Any:
    return content if isinstance(content, str) else [_block(b) for b in content or []]


def sdk_message_to_event(msg: Any) -> dict[str, Any]:
    """One SDK message as the dict `claude -p --output-format stream-json` prints for it."""
    if isinstance(msg, sdk.SystemMessage):  # subclasses (task events, hooks) carry the raw dict too
        event: dict[str, Any] = {"type": "system", "subtype": msg.subtype, **msg.data}
    elif isinstance(msg, sdk.AssistantMessage):
        message = {
            "id": msg.message_id,
            "type": "message",
            "role": "assistant",
            "model": msg.model,
            "content": _content(msg.content),
            "stop_reason": msg.stop_reason,
            "usage": msg.usage,
        }
        event = {
            "type": "assistant",
            "message": message,
            "parent_tool_use_id": msg.parent_tool_use_id,
            "session_id": msg.session_id,
            "uuid": msg.uuid,
            "error": msg.error,
        }
    elif isinstance(msg, sdk.UserMessage):
        event = {
            "type": "user",
            "message": {"role": "user", "content": _content(msg.content)},
            "parent_tool_use_id": msg.parent_tool_use_id,
            "uuid": msg.uuid,
            "tool_use_result": msg.tool_use_result,
        }
    elif isinstance(msg, sdk.ResultMessage):
        fields = dataclasses.asdict(msg)
        fields["modelUsage"] = fields.pop("model_usage", None)  # the CLI's own key name
        event = {"type": "result", **fields}
    elif dataclasses.is_dataclass(msg) and not isinstance(msg, type):
        kind = (
            "stream_event"
            if isinstance(msg, sdk.StreamEvent)
            else re.sub(r"(?<!^)(?=[A-Z])", "_", type(msg).__name__).lower()
        )
        event = {"type": kind, **dataclasses.asdict(msg)}
    else:
        event = {"type": "unknown", "repr": repr(msg)}
    result: dict[str, Any] = _jsonable(event)
    return result
