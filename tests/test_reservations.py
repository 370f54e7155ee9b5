"""Issue 37, item 5: every paid call reserves first (a judge's calls, each retry and re-ask
included) and every reservation ends however its unit of work ends. Random failures (late
answers, 5xx, refused keys, crashing scorers, a workspace that cannot be prepared, an analyst
that raises) are driven through the real stages (`RolloutRunner` with a judged benchmark, the
`Reflection` pool) over chat models built like the SDK backends (skillgrad's retry loop and
re-asks, metered by the run's ledger); afterwards the provider billed no more than the cap, the
ledger counted every billed attempt, no two attempts of a slot were on the wire at once, and
nothing is left reserved."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillgrad.backends.chat_agent import ChatAgent
from skillgrad.backends.retry import UNANSWERED, AttemptFailed, with_retries
from skillgrad.backends.structured import complete_structured
from skillgrad.budget import BudgetStop, Ledger
from skillgrad.config import Config
from skillgrad.errors import BackendError, FatalBackendError, TrainingFailed
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.event_bus import Events
from skillgrad.loop.patch_merge import Patch
from skillgrad.loop.reflect_stage import Reflection
from skillgrad.loop.stages import Roles, RolloutRunner
from skillgrad.loop.state import TrainState
from skillgrad.run_folder import RunDir
from skillgrad.values import AgentResult, Message, Reply, Score, Task, Usage

OUTCOMES = ("ok", "ok", "ok", "late", "5xx", "bad_json", "refused")


class Provider:
    """The fake API: each attempt takes the next outcome of the script; it counts what it bills
    (an answer, or an attempt the client gave up on) and the attempts open at once."""

    def __init__(self, script: list[str]) -> None:
        self.lock = threading.Lock()
        self.script = itertools.cycle(script)
        self.billed = self.open = self.most_open = 0

    def attempt(self) -> str:
        with self.lock:
            outcome = next(self.script)
            self.open += 1
            self.most_open = max(self.most_open, self.open)
            self.billed += outcome in ("ok", "late", "bad_json")
        time.sleep(0.001)  # on the wire
        with self.lock:
            self.open -= 1
        return outcome


class FlakyChat:
    """A metered ChatModel built like the SDK backends: one request per attempt, retried by
    skillgrad's loop, re-asked for JSON by the shared structured loop."""

    name, model = "flaky", "flaky-1"

    def __init__(self, provider: Provider, retries: int) -> None:
        self.provider, self.retries = provider, retries
        self.meter: Ledger | None = None

    def _attempt(self) -> tuple[str, Usage]:
        outcome = self.provider.attempt()

        def failed(attempts: int, paid: Usage) -> BackendError:
            return BackendError(f"flaky: {outcome} after {attempts} attempts", paid)

        if outcome == "refused":
            raise FatalBackendError("flaky: the key was refused")
        if outcome == "late":
            raise AttemptFailed(UNANSWERED, True, failed)
        if outcome == "5xx":
            raise AttemptFailed(Usage(), True, failed, retry_after_s=0.0)
        return ("not json" if outcome == "bad_json" else '{"ok": true}'), Usage(10, 2, 1, 0.001)

    def complete(
        self, messages: list[Message], *, schema: Any = None, effort: Any = None, stage: str
    ) -> Reply:
        def call(convo: list[Message]) -> tuple[str, Usage]:
            return with_retries(self._attempt, retries=self.retries, meter=self.meter, backoff=lambda n: 0.0)

        return complete_structured(
            call, messages, schema, backend=self.name, stage=stage, retries=1, meter=self.meter
        )


class JudgedTasks:
    """A judged, agentic benchmark: preparing a workspace may fail; the judge may fail too."""

    name = "judged"

    def __init__(self, prepare_fails: set[int], scorer_crashes: set[int]) -> None:
        self.prepare_fails, self.scorer_crashes = prepare_fails, scorer_crashes
        self.judge: Any = None

    def load(self, split: str) -> list[Task]:
        return []

    def use_judge(self, judge: Any) -> None:
        self.judge = judge

    def prepare(self, task: Task, workspace: Path) -> None:
        if int(task.id[1:]) in self.prepare_fails:
            raise OSError(f"cannot prepare {task.id}")

    def score(self, task: Task, result: AgentResult) -> Score:
        if int(task.id[1:]) in self.scorer_crashes:
            raise ZeroDivisionError("a scorer's bug")
        reply = self.judge.complete(
            [Message("user", result.answer)], schema={"type": "object"}, stage="judge"
        )
        return Score(1.0 if reply.data else 0.0, bool(reply.data), "judged")


def flaky_analyst(raises: set[int]) -> Any:
    def analyst(chat: Any, inputs: Any, index: int, effort: Any, proposal: int) -> Any:
        if index in raises:
            raise ValueError("an analyst's bug")
        reply = chat.complete([Message("user", "improve")], schema={"type": "object"}, stage="reflect")
        return Patch(index, [], 1, proposal), reply, []

    return analyst


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=30),
    cap=st.integers(1, 40),
    concurrency=st.integers(1, 6),
    tasks=st.integers(1, 10),
    retries=st.integers(0, 3),
    prepare_fails=st.sets(st.integers(0, 9), max_size=3),
    scorer_crashes=st.sets(st.integers(0, 9), max_size=3),
    analyst_raises=st.sets(st.integers(0, 4), max_size=2),
)
def test_random_failures_never_pass_the_cap_nor_leave_a_reservation(
    script: list[str],
    cap: int,
    concurrency: int,
    tasks: int,
    retries: int,
    prepare_fails: set[int],
    scorer_crashes: set[int],
    analyst_raises: set[int],
) -> None:
    provider = Provider(script)
    cfg = Config.model_validate(
        {
            "budget": {"max_calls": cap},
            "train": {"concurrency": concurrency, "minibatch_size": 2, "batch_size": 10},
        }
    )
    ledger = Ledger(cfg.budget)
    accounting = Accounting(ledger)
    target, judge, analyst_chat = (FlakyChat(provider, retries) for _ in range(3))
    for chat in (target, judge, analyst_chat):
        chat.meter = ledger  # as the registry meters every chat model of a run
    benchmark = JudgedTasks(prepare_fails, scorer_crashes)
    roles = Roles(optimizer=analyst_chat, agent=ChatAgent(target), target_is_harness=False, judge=judge)
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir(Path(tmp) / "run")
        run.create()
        runner = RolloutRunner(cfg, benchmark, roles, run, Events(), accounting)
        batch = [Task(f"t{i}", f"question {i}?", answers=("a",)) for i in range(tasks)]
        rollouts = []
        with contextlib.suppress(BudgetStop, FatalBackendError, OSError):
            rollouts = runner.rollouts(batch, "skill", Path("steps/0001/rollouts/train"), "rollout", 1)
        reflection = Reflection(
            cfg, roles, run, Events(), accounting, flaky_analyst(analyst_raises), slots=runner.slots,
            caps=runner.caps,
        )  # fmt: skip
        state = TrainState(current_text="skill")
        with contextlib.suppress(BudgetStop, FatalBackendError, ValueError, TrainingFailed):
            reflection.reflect(1, 1, state, rollouts, 2)

    figures = (
        f"billed {provider.billed}, ledger {ledger.total().calls}, cap {cap}, in flight {ledger.in_flight()}"
    )
    assert provider.billed <= cap, figures
    assert ledger.total().calls == provider.billed, figures  # every billed attempt is counted
    assert ledger.in_flight() == 0, figures  # every reservation ended
    assert provider.most_open <= concurrency, figures
