"""DSPy's side of bench/vs_peers.py that needs no DSPy (CI has none): the candidates its search can
pay for, the prompt DSPy 3.4.1 wrote filled per task and read as its adapter reads it, and that
prompt scored on the test items through the router, each call counted as a test call.

tests/fixtures/dspy/program.json is what bench/dspy_run.py wrote (DSPy 3.4.1's ChatAdapter
messages, demos as chat turns) in a run on the counting items of tests/test_bench_peers.py behind
a scripted target."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, Status, text
from tests.test_bench_peers import seed_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import peers_dspy as pd  # noqa: E402
import peers_server as ps  # noqa: E402
import peers_systems  # noqa: E402

from skillgrad.values import Task  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def test_dspy_runs_the_candidates_the_budget_pays_for() -> None:
    assert pd.plan(48, 12, 12) == [-3, -2, -1]  # zero-shot 12, labelled 12, bootstrapped 12 + 12
    assert pd.plan(95, 12, 12) == [-3, -2, -1, 0]
    assert pd.plan(96, 12, 12) == [-3, -2, -1, 0, 1]
    assert pd.plan(30, 12, 12) == [-3, -2] and pd.plan(11, 12, 12) == []


def test_dspy_prompts_are_filled_and_read_as_its_adapter_does() -> None:
    program = json.loads((Path(__file__).parent / "fixtures" / "dspy" / "program.json").read_text())
    best = program["best"]
    filled = pd.fill(best["messages"], {"question": "I have 3 pears. How many fruits?"})
    assert [m["role"] for m in filled] == ["system", *["user", "assistant"] * 4, "user"]
    assert filled[:-1] == best["messages"][:-1] and "<<dspy input" not in filled[-1]["content"]
    assert filled[-1]["content"].startswith("[[ ## question ## ]]\nI have 3 pears. How many fruits?\n\n")
    with pytest.raises(ValueError, match="no placeholder for context"):
        pd.fill(best["messages"], {"context": "c", "question": "q"})
    assert pd.answer_of("[[ ## answer ## ]]\n 8 \n\n[[ ## completed ## ]]\n") == "8"
    assert pd.answer_of("[[ ## reasoning ## ]]\nso\n[[ ## answer ## ]]\n(B)") == "(B)"
    assert pd.answer_of("  8 fruits\n") == "8 fruits"  # no marker: the whole reply
    assert pd.input_fields([Task("a", "q", "ctx", ("x",))]) == ["context", "question"]
    assert pd.input_fields([Task("a", "q", None, ("x",))]) == ["question"]


def dspy_world(request: Request) -> Any:
    """A target that follows DSPy's format only when shown demos; one item's call fails."""
    n = request.user.split("I have ")[1].split(" ")[0]
    if n == "14":
        return Status(400, "the request exceeds the context window")
    demos = any(m.get("role") == "assistant" for m in request.messages)
    return text(f"[[ ## answer ## ]]\n{n}\n\n[[ ## completed ## ]]" if demos else f"{n} fruits", 30, 4)


def test_dspy_prompts_are_scored_on_the_test_items_through_the_router(tmp_path: Path) -> None:
    program = json.loads((Path(__file__).parent / "fixtures" / "dspy" / "program.json").read_text())
    with ScriptedOpenAI(dspy_world) as target:
        router = ps.Router({"target": int(target.base_url.split(":")[2].split("/")[0])}, {"target": 64}, 30)
        threading.Thread(target=router.serve_forever, daemon=True).start()
        try:
            sr = seed_run(tmp_path, router, 256)
            before, after, _, counted = peers_systems.dspy_test(sr, program)
            again = peers_systems.dspy_test(sr, program)
        finally:
            router.shutdown()
            router.server_close()
    test = sr.test_tasks
    failing = sum(1 for t in test if t.answers[0] == "14")
    assert failing == 1
    assert before == 0.0 and after == pytest.approx(1 - failing / 32)
    assert counted["test_calls"] == len(target.requests) - 2 * failing == 64 - 2 * failing
    assert counted["target_calls"] == 0 and again[:2] == (before, after) and len(target.requests) == 64
    assert counted["test_errors"] == 2 * failing and again[3]["test_errors"] == 0  # nothing scored again
    best = [r for r in target.requests if len(r.messages) == 10]
    assert len(best) == 32 and all(r["max_tokens"] == 64 and r["temperature"] == 0.0 for r in best)
    assert {r.user.split("\n")[1] for r in best} == {t.question for t in test}
