"""What the public API's tests share: the example of docs/api.md (examples/train_in_python.py) run
as code in a test's own namespace, and the scripted OpenAI world its house facts live in.

In that world the target answers a question with its fact only when the skill (its system prompt)
states the fact, and the analyst proposes the sentence the scorer's feedback states; so a run
gains exactly when the scorer, the analyst's prompt, the gate and the skill all do their part.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import Request, Response, ScriptedOpenAI, json_reply, text

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "train_in_python.py"
FAKE_KEY = "sk-test-FAKE-api-0123456789abcdef"


def example_namespace() -> dict[str, Any]:
    """The example's code run in a fresh namespace (not as __main__): its functions, `score`
    included, are defined here, inside the calling test, and importable from nowhere."""
    namespace: dict[str, Any] = {"__name__": "docs_api_example"}
    exec(compile(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE), "exec"), namespace)
    return namespace


def is_optimizer(request: Request) -> bool:
    return "You improve a SKILL document" in request.system


class FactsWorld:
    """The scripted API for the example's house facts (`facts`: the example's FACTS)."""

    def __init__(self, facts: dict[str, tuple[str, str, tuple[str, ...]]]) -> None:
        self.facts = facts
        self.lock = threading.Lock()
        self.asked: list[str] = []  # "optimizer" / "target", in arrival order

    def fact_of(self, question: str) -> str | None:
        return next((f for f, (_, _, asks) in self.facts.items() if any(a in question for a in asks)), None)

    def __call__(self, request: Request) -> Response:
        with self.lock:
            self.asked.append("optimizer" if is_optimizer(request) else "target")
        if is_optimizer(request):
            stated = [s for _, s, _ in self.facts.values() if f"{s} The answer must contain" in request.user]
            edits = [
                {"op": "add", "target": "", "content": s, "rationale": "the grader states it"} for s in stated
            ]
            return json_reply({"edits": edits[:1]}, usage=(300, 40))
        fact = self.fact_of(request.user)
        if fact is not None and self.facts[fact][1] in request.system:
            return text(f"It is {self.facts[fact][0]}.", 20, 8)
        return text("I am not sure; please ask the team.", 20, 10)


def scripted_config(base: dict[str, Any], server_url: str, cache: Path) -> dict[str, Any]:
    """`base` (the example's CONFIG) with both roles on the scripted server and a private cache."""
    config = copy.deepcopy(base)
    config["model"] = {
        **config.get("model", {}),
        "backend": "openai_chat",
        "base_url": server_url,
        "api_key": FAKE_KEY,
        "optimizer_model": "fake-optimizer",
        "target_model": "fake-target",
    }
    config["cache"] = {"dir": str(cache)}
    return config


@contextlib.contextmanager
def facts_server() -> Iterator[tuple[dict[str, Any], FactsWorld, ScriptedOpenAI]]:
    """The example's namespace, its facts world and a scripted OpenAI server answering from it
    (the `world` fixture of the API tests)."""
    example = example_namespace()
    facts = FactsWorld(example["FACTS"])
    with ScriptedOpenAI(facts) as server:
        yield example, facts, server
