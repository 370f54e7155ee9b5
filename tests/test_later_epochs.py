"""Later epochs see new evidence or the run stops saying why (issue 37, item 10): a target that
samples is asked afresh in each epoch, rejected edits stay shown while the skill they were
rejected against is current, and a step whose inputs the call cache would replay is not run."""

from __future__ import annotations

from pathlib import Path

from skillgrad.loop.decision.gate import make_gate
from skillgrad.loop.state import TrainState
from skillgrad.loop.stopping import note_reflected, stop_reason
from skillgrad.skilldoc import Edit, SkillDoc
from skillgrad.values import Task
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import history, is_optimizer, read_json, skillgrad, target_answer, write_config


def batch(*ids: str) -> list[Task]:
    return [Task(i, f"question {i}") for i in ids]


def test_a_pass_of_an_earlier_epoch_counts_only_where_it_would_replay() -> None:
    gate = make_gate("strict", 0.05, 1.0)
    state = TrainState(current_text="skill", current_score=0.5)
    state.train_passed[SkillDoc("skill").content_hash] = ["a", "b", "c"]
    remaining = [(3, 1, batch("a", "b")), (4, 2, batch("c")), (5, 2, batch("a", "b"))]
    code = (stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=True) or ("",))[0]
    assert code == "no_failures"
    # No cache, or a target that samples: the next epoch asks afresh, a pass may not recur.
    assert stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=False) is None


def test_a_step_the_cache_would_replay_stops_the_run_with_its_reason() -> None:
    gate = make_gate("strict", 0.05, 1.0)
    state = TrainState(current_text="skill", current_score=0.5)
    note_reflected(state, batch("b", "a"))  # epoch 1's one step, in its order
    remaining = [(2, 2, batch("a", "b")), (3, 3, batch("b", "a"))]
    code, sentence = stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=True) or ("", "")
    assert code == "no_new_evidence" and "nothing new" in sentence
    assert stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=False) is None
    state.rejected_edits.append(Edit("add", "end", "A rule."))  # something new to show: go on
    assert stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=True) is None
    note_reflected(state, batch("a", "b"))
    assert stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=True) is not None
    state.current_text = "another skill"  # a new skill: everything is new evidence
    assert stop_reason(gate, state, {"v1": [0.0]}, remaining, None, replays=True) is None


SKILL = "# Capitals\n\nAnswer with the city only.\n"


def analyst_repeats_the_skill(request: Request):
    """An analyst that only restates the skill: every edit is dropped, nothing is rejected."""
    edit = {"op": "add", "target": "end", "content": "Answer with the city only.", "rationale": "r"}
    return json_reply({"edits": [edit]}, usage=(300, 40))


def run(tmp_path: Path, handler, *sets: str) -> tuple[Path, list[Request]]:
    skill = tmp_path / "skill.md"
    skill.write_text(SKILL, encoding="utf-8")
    with ScriptedOpenAI(handler) as server:
        cfg = write_config(tmp_path, server, batch_size=4, minibatch_size=4, epochs=3)
        out = tmp_path / "run"
        args = [a for s in (f"skill.init={skill}", *sets) for a in ("--set", s)]
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), *args)
        assert proc.returncode == 0, proc.stderr
        return out, list(server.requests)


def test_a_replayed_epoch_is_not_run(tmp_path: Path) -> None:
    """One batch an epoch, a target at temperature 0 and the cache on: epoch 2 would show the
    analyst epoch 1's very prompt and replay its reply. The run stops before it, saying why."""

    def handler(request: Request):
        return analyst_repeats_the_skill(request) if is_optimizer(request) else text(target_answer(request))

    out, _ = run(tmp_path, handler, "optimizer.form_fix=rule")  # no first examples: the skill stays
    summary = read_json(out / "summary.json")
    assert summary["stopped"] == "no_new_evidence" and "nothing new" in summary["stop_reason"]
    assert [s["step"] for s in history(out)] == [1]


def test_a_target_that_samples_is_asked_afresh_in_each_epoch(tmp_path: Path) -> None:
    """At temperature 0.7 a later epoch's train rollouts are new samples (new evidence), not the
    first epoch's answers replayed by the cache; the run does not stop for lack of evidence."""

    def handler(request: Request):
        return analyst_repeats_the_skill(request) if is_optimizer(request) else text(target_answer(request))

    out, requests = run(tmp_path, handler, "model.temperature=0.7", "optimizer.form_fix=rule")
    assert read_json(out / "summary.json")["stopped"] == "completed"
    assert [s["epoch"] for s in history(out)] == [1, 2, 3]
    train = out / "steps" / "0001" / "rollouts" / "train"
    train_questions = {read_json(path)["question"] for path in train.glob("*/task.json")}
    assert len(train_questions) == 4
    asked = [r for r in requests if not is_optimizer(r) and any(q in r.user for q in train_questions)]
    assert len(asked) == 3 * len(train_questions)  # each train task asked once in every epoch
