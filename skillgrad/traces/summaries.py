"""One-line summaries of tool calls that say what the call did (what the optimizer reads).

Each known tool has a summarizer that leads with what matters (Bash: the command; Edit: the path and
the size of the change; TodoWrite: each item's status; Task: the subagent and its description;
AskUserQuestion: the question); MCP tools show server, tool and key arguments; anything else falls
back to its most telling argument followed by the rest, long strings given as sizes only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_VALUE_CHARS = 300
_ARG_CHARS = 80
# Keys whose value best says what an unknown tool's call does, most telling first.
_TELLING_KEYS = (
    "command",
    "file_path",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "skill",
    "prompt",
)
_TODO_MARKS = {"completed": "x", "in_progress": ">", "pending": " "}


def one_line_value(value: Any, limit: int = _VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _size(text: Any) -> str:
    text = text if isinstance(text, str) else ""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"{lines} line{'s' * (lines != 1)}, {len(text)} chars"


def _generic(args: dict[str, Any]) -> str:
    main = next((k for k in _TELLING_KEYS if isinstance(args.get(k), str)), None)
    parts = [one_line_value(args[main])] if main else []
    for key, value in args.items():
        if key in (main, "description"):
            continue
        if isinstance(value, str) and len(value) > _ARG_CHARS:
            parts.append(f"{key}=<{len(value)} chars>")  # file contents, edit strings: size only
        else:
            parts.append(f"{key}={one_line_value(value, _ARG_CHARS)}")
    return " ".join(parts) if parts else "(no input)"


def _bash(args: dict[str, Any]) -> str:
    text = one_line_value(args.get("command", ""))
    if args.get("run_in_background"):
        text += " (in background)"
    return text


def _read(args: dict[str, Any]) -> str:
    text = str(args.get("file_path") or args.get("path") or "?")
    window = [f"{k}={args[k]}" for k in ("offset", "limit") if args.get(k) is not None]
    return " ".join([text, *window])


def _write(args: dict[str, Any]) -> str:
    return f"{args.get('file_path', '?')} ({_size(args.get('content'))})"


def _edit(args: dict[str, Any]) -> str:
    old, new = str(args.get("old_string") or ""), str(args.get("new_string") or "")
    every = ", every occurrence" if args.get("replace_all") else ""
    return f"{args.get('file_path', '?')} (replace {len(old)} chars with {len(new)}{every})"


def _multi_edit(args: dict[str, Any]) -> str:
    raw = args.get("edits")
    edits: list[Any] = raw if isinstance(raw, list) else []
    old = sum(len(str(e.get("old_string") or "")) for e in edits if isinstance(e, dict))
    new = sum(len(str(e.get("new_string") or "")) for e in edits if isinstance(e, dict))
    return f"{args.get('file_path', '?')} ({len(edits)} edits: {old} chars -> {new})"


def _todo_write(args: dict[str, Any]) -> str:
    todos = [t for t in args.get("todos") or [] if isinstance(t, dict)]
    done = sum(1 for t in todos if t.get("status") == "completed")
    items = [
        f"[{_TODO_MARKS.get(str(t.get('status')), '?')}] {one_line_value(t.get('content', ''), 60)}"
        for t in todos
    ]
    return f"{len(todos)} todos, {done} done: " + "; ".join(items)


def _task(args: dict[str, Any]) -> str:
    kind = args.get("subagent_type") or "agent"
    description = one_line_value(args.get("description") or "", 120)
    prompt = args.get("prompt")
    size = f" (prompt {len(prompt)} chars)" if isinstance(prompt, str) else ""
    return f"{kind}: {description}{size}" if description else f"{kind}{size}"


def _ask_user(args: dict[str, Any]) -> str:
    questions = [q for q in args.get("questions") or [] if isinstance(q, dict)]
    if not questions:
        return one_line_value(args.get("question") or _generic(args))
    parts = []
    for q in questions:
        options = [str(o.get("label")) for o in q.get("options") or [] if isinstance(o, dict)]
        choice = f" [{' | '.join(options)}]" if options else ""
        parts.append(one_line_value(q.get("question", ""), 200) + choice)
    return " / ".join(parts)


def _web_fetch(args: dict[str, Any]) -> str:
    prompt = args.get("prompt")
    return str(args.get("url", "?")) + (f" ({one_line_value(prompt, 100)})" if prompt else "")


def _web_search(args: dict[str, Any]) -> str:
    return one_line_value(args.get("query", "?"))


def _search(args: dict[str, Any]) -> str:
    where = f" in {args['path']}" if args.get("path") else ""
    rest = [f"{k}={one_line_value(v, 40)}" for k, v in args.items() if k not in ("pattern", "path")]
    return " ".join([f"{one_line_value(args.get('pattern', ''), 200)}{where}", *rest])


_SUMMARIZERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "Bash": _bash,
    "Read": _read,
    "Write": _write,
    "Edit": _edit,
    "MultiEdit": _multi_edit,
    "NotebookEdit": lambda a: f"{a.get('notebook_path', '?')} ({a.get('edit_mode', 'replace')} cell)",
    "TodoWrite": _todo_write,
    "Task": _task,
    "Agent": _task,
    "AskUserQuestion": _ask_user,
    "WebFetch": _web_fetch,
    "WebSearch": _web_search,
    "Grep": _search,
    "Glob": _search,
}


def _mcp(name: str, args: dict[str, Any]) -> str:
    _, server, tool = (name.split("__", 2) + ["", ""])[:3]
    return f"{server}/{tool or '?'} {_generic(args)}".strip()


def summarize_tool_input(name: str, tool_input: Any) -> str:
    """One line saying what a tool call did; never raises, whatever the input's shape."""
    if not isinstance(tool_input, dict):
        return one_line_value(tool_input)
    if name.startswith("mcp__"):
        return _mcp(name, tool_input)
    summarizer = _SUMMARIZERS.get(name, _generic)
    try:
        return " ".join(summarizer(tool_input).split()) or "(no input)"
    except (AttributeError, TypeError, ValueError):  # an odd shape from a newer CLI: say what is there
        return _generic(tool_input)
