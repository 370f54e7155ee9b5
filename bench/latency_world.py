"""The scripted fixed-latency world of bench/latency.py: one OpenAI-compatible server (127.0.0.1)
that plays the target and the optimizer for skillgrad and for SkillOpt 0.2.0 alike.

Every request is answered exactly L seconds after it was read. The behaviour is one and the same
for both systems, only the wire formats differ:

- target: right on an item when `bucket(item) < 4 + 2 x (good rules in the skill) - 3 x (harmful
  rule in the skill)` (in tenths), i.e. right on 40 % of the items plus 20 points per good rule
  held, minus 30 for the harmful one. The item is recognised by its question (the last line of
  the question text), the skill by its rules appearing in the system prompt. skillgrad's
  chat target gets the bare answer, SkillOpt's SearchQA agent `<answer>...</answer>`.
- analyst (skillgrad's reflect; SkillOpt's error and success analysts): proposes the next two
  rules of one fixed list that its prompt does not mention (a rule in the skill or among the
  rejected edits is mentioned). The third rule of the list is the harmful one.
- merge (SkillOpt only): the union of the patches' rules, de-duplicated, in order of appearance.
- rank (SkillOpt only): the first `budget` edits of the pool, in pool order.

Each request is classified by markers that the two systems' own prompt code writes (checked
against both systems' prompts: see docs/benchmarks.md); an unrecognised request is counted as
`unknown` and answered with an empty reply, so it can never pass unnoticed.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GOOD = [
    f"Rule {n}: {text}"
    for n, text in enumerate(
        [
            "Answer with the shortest span that names the entity.",
            "Drop leading articles (a, an, the).",
            "Prefer the name as the clue's category spells it.",
            "Give a person's surname only when the clue asks who.",
            "Copy the answer's spelling from the context.",
            "Answer years as four digits.",
            "Never add an explanation after the answer.",
            "Resolve wordplay clues to the punchline's noun.",
        ],
        start=1,
    )
]
HARMFUL = "Rule X: Always answer with a full sentence."
ORDER = [GOOD[0], GOOD[1], HARMFUL, *GOOD[2:]]  # what analysts propose, first missing first
BASE_DECILES, PER_RULE, HARM = 4, 2, 3  # right on 40% of items, +20 points per good rule
WRONG = "I do not know."

SKILLGRAD_ANALYST = "You improve a SKILL document"  # skillgrad/loop/prompts/analyst_system.md
SKILLGRAD_TASK_END = "\n\nReply with the answer only."  # skillgrad/backends/prompts/chat_target_task.md
SKILLOPT_QUESTION = "## Question\n"  # skillopt/envs/searchqa/rollout.py _build_user
SKILLOPT_ANALYST = ("## Failed Trajectories (", "## Successful Trajectories (")  # gradient/reflect.py
SKILLOPT_MERGE = ("## Patches to merge (", "## Two pre-merged patch groups to combine")  # aggregate.py
SKILLOPT_RANK = "Return their 0-based indices in priority order."  # optimizer/clip.py
KINDS = ("rollout", "val", "analyst", "merge", "rank", "unknown")


def question_key(text: str) -> str:
    """The item's identity in every format: the last non-empty line of its question."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class Item:
    answer: str
    split: str  # "train" or "val": a target call on a val item is validation


def bucket(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % 10


def target_right(system: str, key: str) -> bool:
    good = sum(rule in system for rule in GOOD)
    deciles = BASE_DECILES + PER_RULE * good - (HARM if HARMFUL in system else 0)
    return bucket(key) < deciles


def proposed_rules(prompt: str, n: int = 2) -> list[str]:
    return [rule for rule in ORDER if rule not in prompt][:n]


def rules_in_order(text: str) -> list[str]:
    found = [(text.find(rule), rule) for rule in ORDER if rule in text]
    return [rule for _, rule in sorted(found)]


@dataclass
class Scripted:
    """The scripted roles for one run: `calls` by kind, `intervals` (start, end) of every call."""

    latency: float
    items: dict[str, Item]
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    intervals: list[tuple[float, float]] = field(default_factory=list)

    def record(self, kind: str, started: float, ended: float) -> None:
        with self.lock:
            self.calls[kind] += 1
            self.intervals.append((started, ended))

    def classify(self, system: str, user: str) -> str:
        if SKILLGRAD_ANALYST in system or any(m in user for m in SKILLOPT_ANALYST):
            return "analyst"
        if any(m in user for m in SKILLOPT_MERGE):
            return "merge"
        if SKILLOPT_RANK in user:
            return "rank"
        item = self.item_of(user)
        if item is not None:
            return "val" if item[1].split == "val" else "rollout"
        return "unknown"

    def item_of(self, user: str) -> tuple[str, Item] | None:
        user = user.rstrip()
        if user.endswith(SKILLGRAD_TASK_END):
            key = question_key(user[: -len(SKILLGRAD_TASK_END)])
        elif SKILLOPT_QUESTION in user:
            key = question_key(user.rsplit(SKILLOPT_QUESTION, 1)[1])
        else:
            return None
        item = self.items.get(key)
        return (key, item) if item is not None else None

    def reply(self, kind: str, system: str, user: str) -> str:
        skillopt = SKILLGRAD_ANALYST not in system and not user.rstrip().endswith(SKILLGRAD_TASK_END)
        if kind == "analyst":
            return analyst_reply(user, skillopt)
        if kind == "merge":
            return merge_reply(user)
        if kind == "rank":
            return rank_reply(user)
        found = self.item_of(user)
        if found is None:
            return ""
        key, item = found
        answer = item.answer if target_right(system, key) else WRONG
        return f"<answer>{answer}</answer>" if skillopt else answer


def analyst_reply(user: str, skillopt: bool) -> str:
    rules = proposed_rules(user)
    if not skillopt:
        edits = [{"op": "add", "target": "", "content": r, "rationale": "misses"} for r in rules]
        return json.dumps({"edits": edits})
    summary = [{"failure_type": "rule_missing", "count": 1, "description": "answer form differs"}]
    patch = {"reasoning": "the next rules", "edits": [{"op": "append", "content": r} for r in rules]}
    analysed = user.count("### Trajectory ")
    return json.dumps({"batch_size": analysed, "failure_summary": summary, "patch": patch})


def merge_reply(user: str) -> str:
    pool = user.split(SKILLOPT_MERGE[0], 1)[-1].split(SKILLOPT_MERGE[1], 1)[-1]
    edits = [
        {"op": "append", "content": r, "support_count": pool.count(r), "source_type": "failure"}
        for r in rules_in_order(pool)
    ]
    return json.dumps({"reasoning": "union, de-duplicated", "edits": edits})


def rank_reply(user: str) -> str:
    found = re.search(r"budget=(\d+)\)", user)
    pool = len(re.findall(r"^\[\d+\] ", user, flags=re.MULTILINE))
    budget = int(found.group(1)) if found else pool
    return json.dumps({"reasoning": "pool order", "selected_indices": list(range(min(budget, pool)))})


def completion(content: str, model: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
    ).encode()


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog (5) drops connections when 24 calls start at once,
    # and the kernel's retry then looks like a round of its own; an API server accepts them all.
    request_queue_size = 256


def serve(world: Scripted) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle's algorithm on, the body waits for the
        # client's delayed ACK (~40 ms) on a kept-alive connection. API servers send at once.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            started = time.monotonic()
            messages = body.get("messages", [])
            system = message_text(messages[0]) if messages else ""
            user = message_text(messages[-1]) if messages else ""
            kind = world.classify(system, user)
            payload = completion(world.reply(kind, system, user), str(body.get("model", "bench")))
            time.sleep(max(0.0, world.latency - (time.monotonic() - started)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            world.record(kind, started, time.monotonic())

    httpd = _Server(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd
