"""`skillgrad train` against the scripted OpenAI server: the form fix's first worked examples
where the train answers share no form (loop/formfix.first_examples).

A dyck_languages-style task set: each answer is the closing brackets of a sequence, one to four
of them, so no format rule can state the answers' form and no form problem is ever found. The
scripted target closes a sequence right only when its skill shows it two worked examples. With
an analyst whose only edit is dropped (a copy of the prompt's example edit) the step would select
nothing; the form fix then adds worked examples of the step's tasks, the gate accepts them, and
the best skill's examples name train tasks. With an analyst whose rule is selected, the form fix
adds nothing beside it: examples never ride in the analysts' candidate. Once the gate has rejected
that rule, the next step's new rule is set aside and the worked examples go alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from skillgrad.demos import parse_demos
from skillgrad.loop.shapes import form_rule
from tests.fakes.openai_server import Request
from tests.test_examples_e2e import examples_seen, train, train_tasks
from tests.test_train_e2e import read_json

PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
STEM = "Complete the rest of the sequence, making sure that the parentheses are closed properly. Input:"
RULE = "Close the brackets that are still open, innermost first."


def items() -> list[dict[str, str]]:
    rows = []
    for i in range(20):
        opened = [list(PAIRS)[(i + k) % 4] for k in range(1 + i % 4)]
        closing = " ".join(PAIRS[b] for b in reversed(opened))
        rows.append({"id": f"dyck-{i}", "input": f"{STEM} {' '.join(opened)}", "target": closing})
    return rows


ROWS = items()
EXPECTED = {r["input"]: r["target"] for r in ROWS}


def target_reply(request: Request) -> str:
    question = request.user.strip().removesuffix("Reply with the answer only.").strip()
    closing = EXPECTED[question]
    return closing if examples_seen(request) >= 2 else f"The sequence closes with {closing[0]}"


def dyck_train(
    tmp_path: Path, analyst: Callable[[Request], list[dict[str, str]]], *overrides: str
) -> tuple[Path, set[str]]:
    """`skillgrad train` on ROWS with `analyst`'s edits; (the run folder, the train split's ids),
    the split checked to be the case: no form a rule can state."""
    tasks = train_tasks(tmp_path, ROWS)
    assert form_rule([t.answers[0] for t in tasks]) is None
    out, _ = train(tmp_path, analyst, *overrides, target=target_reply, rows=ROWS)
    return out, {t.id for t in tasks}


def test_an_idle_step_gets_worked_examples_where_the_answers_share_no_form(tmp_path: Path) -> None:
    # the prompt's own example edit, copied (ruin_names seed 0's analyst, four times): dropped
    copied = [{"op": "add", "target": "end", "rationale": "as shown",
               "content": "Write chess moves in short algebraic notation, e.g. Nf3 or exd5."}]  # fmt: skip
    out, train_ids = dyck_train(tmp_path, lambda request: copied)
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    fix = merged["form_fix"]
    assert [e["op"] for e in fix] == ["add_example"] * 4  # skill.max_examples
    assert all("the train answers share no form a rule can state" in e["rationale"] for e in fix)
    assert [e["op"] for e in merged["selected"]] == ["add_example"] * 4
    assert merged["dropped_counts"]["copied from the prompt"] == 1
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is True
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] == 0.0 and summary["best_val_score"] == 1.0
    demos = parse_demos((out / "best_skill.md").read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in ROWS}
    assert len(demos) == 4 and {d.task_id for d in demos} <= train_ids
    assert all(d.answer == by_id[d.task_id]["target"] for d in demos)


def test_no_examples_ride_beside_a_rule_the_analyst_got_selected(tmp_path: Path) -> None:
    rule = [{"op": "add", "target": "end", "content": RULE, "rationale": "sequences left open"}]
    out, _ = dyck_train(tmp_path, lambda request: rule)
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["form_fix"] == [] and [e["op"] for e in merged["selected"]] == ["add"]
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is False  # the rule alone: 0/6
    assert parse_demos((out / "best_skill.md").read_text(encoding="utf-8")) == []


def test_after_rules_the_gate_rejected_a_step_tries_worked_examples_alone(tmp_path: Path) -> None:
    # dyck_languages seed 2: a rule rejected at step 1, new rules at step 2, no example ever tried
    rules = [RULE, "Count the brackets that are still open before closing them."]
    calls: list[str] = []

    def analyst(request: Request) -> list[dict[str, str]]:
        calls.append(rules[len(calls) % 2])
        return [{"op": "add", "target": "end", "content": calls[-1], "rationale": "sequences left open"}]

    out, train_ids = dyck_train(tmp_path, analyst, "train.epochs=2")
    first = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert first["form_fix"] == [] and [e["content"] for e in first["selected"]] == [RULE]
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is False
    second = read_json(out / "steps" / "0002" / "merged_patch.json")
    assert [e["op"] for e in second["selected"]] == ["add_example"] * 4
    assert second["dropped_counts"]["set aside for worked examples"] == 1
    assert [d["content"] for d in second["dropped"]] == [rules[1]]
    assert read_json(out / "steps" / "0002" / "gate.json")["accepted"] is True
    best = (out / "best_skill.md").read_text(encoding="utf-8")
    assert rules[1] not in best and RULE not in best
    assert {d.task_id for d in parse_demos(best)} <= train_ids
    assert read_json(out / "summary.json")["best_val_score"] == 1.0
