"""bench/step_effects.py: each validated step of a bench run folder with its val wins and losses,
the paired test's p, the kind of its edits and, for an accepted one, the test scores before and
after it (the bench's own scores read, a missing one evaluated against the served target)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import step_effects as se  # noqa: E402

EMPTY, V1, V2, V3 = "", "Reply with the label.\n", "Reply with the label alone.\n", "Reply (A).\n"


def key(skill: str) -> str:
    return hashlib.sha256(skill.encode("utf-8")).hexdigest()


def seed_folder(tmp_path: Path, scores: dict[str, float]) -> Path:
    """A run of three steps on 6 val items: step 1 adds a rule and examples (4 wins), step 2 swaps them
    (1 win, accepted), step 3 swaps again (1 loss, rejected); the bench knows `scores`."""
    folder = tmp_path / "bbh_date" / "seed2"
    run = folder / "skillgrad" / "run"
    (run / "skills").mkdir(parents=True)
    (run / "skills" / "v0000.md").write_text(EMPTY, encoding="utf-8")
    val = {
        EMPTY: [0, 0, 0, 0, 0, 1],
        V1: [1, 1, 1, 1, 0, 1],  # 4 wins over the empty skill
        V2: [1, 1, 1, 1, 1, 1],  # 1 more
        V3: [1, 1, 1, 0, 1, 1],  # against V2: 1 loss
    }
    results = {key(s): {f"t{i}": [float(v)] for i, v in enumerate(vs)} for s, vs in val.items()}
    (run / "state.json").write_text(json.dumps({"val_results": results}), encoding="utf-8")
    steps = [
        (V1, ["add", "add_example"], True),
        (V2, ["replace_example"], True),
        (V3, ["replace_example"], False),
    ]
    for n, (skill, ops, accepted) in enumerate(steps, start=1):
        step = run / "steps" / f"{n:04d}"
        step.mkdir(parents=True)
        (step / "candidate_skill.md").write_text(skill, encoding="utf-8")
        (step / "gate.json").write_text(json.dumps({"accepted": accepted, "calls": 6}), encoding="utf-8")
        selected = [{"op": op} for op in ops]
        (step / "merged_patch.json").write_text(json.dumps({"selected": selected}), encoding="utf-8")
    (run / "steps" / "0000").mkdir()  # the baseline: no candidate
    known = {key(s)[:16]: v for s, v in scores.items()}
    (folder / "test_scores_abc.json").write_text(json.dumps(known), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("ops", "kind"),
    [
        (["replace_example"], "swaps"),
        (["replace_example", "replace_example"], "swaps"),
        (["add_example", "add"], "adds"),
        (["add_example"], "adds"),
        (["add_example", "replace_example"], "other"),
        (["add"], "other"),
        ([], "other"),
    ],
)
def test_the_kind_of_a_steps_edits(ops: list[str], kind: str) -> None:
    assert se.edit_kind(ops) == kind


def test_steps_are_read_against_their_incumbent_and_tabled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = seed_folder(tmp_path, {EMPTY: 0.0, V2: 0.25})  # V1's score unknown
    steps = se.steps_of(folder)
    assert [(s.step, s.kind, s.wins, s.losses, s.accepted) for s in steps] == [
        (1, "adds", 4, 0, True),
        (2, "swaps", 1, 0, True),
        (3, "swaps", 0, 1, False),  # against V2, the incumbent after step 2
    ]
    assert [s.p_value for s in steps] == pytest.approx([1 / 16, 1 / 2, 1.0])
    assert se.main(["--table-only", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "| bbh_date/seed2 | 1 | adds | 4 / 0 | 0.062 | accepted | - |" in out  # V1 not scored
    assert "| bbh_date/seed2 | 3 | swaps | 0 / 1 | 1.000 | rejected | - |" in out
    assert not [line for line in out.splitlines() if line.startswith("| swaps |")]  # none with both scores


def test_a_missing_score_is_evaluated_and_kept(tmp_path: Path) -> None:
    folder = seed_folder(tmp_path, {EMPTY: 0.0, V2: 0.25})
    asked: list[tuple[Path, str]] = []

    def evaluator(seed: Path):
        def evaluate(skill: Path) -> float:
            asked.append((seed, skill.read_text(encoding="utf-8")))
            return 0.5

        return evaluate

    known = se.test_scores(se.steps_of(folder), evaluator)
    here = str(folder)
    assert asked == [(folder, V1)] and known == {(here, EMPTY): 0.0, (here, V1): 0.5, (here, V2): 0.25}
    # kept where the bench keeps it: the skill in its test folder, the score in the seed's scores
    assert (folder / f"test_{key(V1)[:16]}" / "skill.md").read_text(encoding="utf-8") == V1
    assert json.loads((folder / "test_scores_abc.json").read_text())[key(V1)[:16]] == 0.5
    assert se.test_scores(se.steps_of(folder), None) == known  # read back, nothing evaluated
    lines = se.table(se.steps_of(folder), known)
    assert "| bbh_date/seed2 | 2 | swaps | 1 / 0 | 0.500 | accepted | 0.500 -> 0.250 | - |" in lines
    assert (
        "| swaps | 1 | -0.250 | 0 / 1 (1.000) |" in lines and "| adds | 1 | +0.500 | 1 / 0 (1.000) |" in lines
    )


def test_the_evaluator_scores_a_skill_on_the_test_split_at_the_served_address(tmp_path: Path) -> None:
    """`skillgrad eval --split test` with the seed folder's config, its base_url replaced."""
    rows = [{"input": f"Question {i}?\nOptions:\n(A) x\n(B) y", "target": "(A)"} for i in range(12)]
    data = tmp_path / "task.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    folder = tmp_path / "bbh_date" / "seed0"
    folder.mkdir(parents=True)
    config = {
        "benchmark": {"name": "bbh", "data": str(data), "train_size": 4, "val_size": 4, "test_size": 4},
        "model": {"backend": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-bench",
                  "target_model": "target", "optimizer_model": "optimizer", "max_retries": 0},
        "cache": {"enabled": False},
    }  # fmt: skip
    (folder / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    skill = folder / "test_x" / "skill.md"
    skill.parent.mkdir()
    skill.write_text("Answer with the label.", encoding="utf-8")

    def answer(request: Request):
        return text("(A)" if "Answer with the label." in request.system else "(B)")

    with ScriptedOpenAI(answer) as server:
        assert se.evaluator(folder, server.base_url)(skill) == 1.0
        assert len(server.requests) == 4


def test_a_folder_without_a_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert se.main(["--table-only", str(tmp_path)]) == 2
    assert "no skillgrad/run/state.json" in capsys.readouterr().err


def test_each_seed_keeps_its_own_scores_of_the_same_skill_text(tmp_path: Path) -> None:
    """The empty skill scores 0 on one seed's test items and 0.5 on another's."""
    one = seed_folder(tmp_path / "one", {EMPTY: 0.0, V1: 0.5, V2: 0.25})
    two = seed_folder(tmp_path / "two", {EMPTY: 0.5, V1: 0.75, V2: 0.75})
    steps = se.steps_of(one) + se.steps_of(two)
    lines = se.table(steps, se.test_scores(steps, None))
    assert lines.count("| bbh_date/seed2 | 1 | adds | 4 / 0 | 0.062 | accepted | 0.000 -> 0.500 | - |") == 1
    assert lines.count("| bbh_date/seed2 | 1 | adds | 4 / 0 | 0.062 | accepted | 0.500 -> 0.750 | - |") == 1
    assert "| adds | 2 | +0.375 | 2 / 0 (0.500) |" in lines


def write_answers(folder: Path, answers: list[str], expected: list[str]) -> None:
    """An evaluation's test answers as `skillgrad eval` writes them (one score.json a task)."""
    for i, (answer, target) in enumerate(zip(answers, expected, strict=True)):
        task = folder / "eval" / "rollouts" / "test" / f"t{i}"
        task.mkdir(parents=True)
        score = {"answer": answer, "expected": [target], "passed": answer == target}
        (task / "score.json").write_text(json.dumps(score), encoding="utf-8")


def test_the_label_the_test_answers_give_most_is_read_and_steps_are_split_by_it(tmp_path: Path) -> None:
    folder = seed_folder(tmp_path, {EMPTY: 0.0, V1: 0.5, V2: 0.25})
    expected = ["(A)", "(B)", "(A)", "(B)"]
    # the empty skill names labels with words after them; one answer names none
    write_answers(folder / "test_initial", ["(B) the 5th", "(b)", "12/01/2001", "(A) x"], expected)
    write_answers(folder / f"test_{key(V1)[:16]}", ["(A)", "(B)", "(A)", "(A)"], expected)
    write_answers(folder / f"test_{key(V2)[:16]}", ["(A)", "(A)", "(A)", "(A)"], expected)
    assert se.top_label(folder / "test_initial") == ("(b)", 0.5)
    assert se.top_label(folder / "test_missing") is None
    steps = se.steps_of(folder)
    lines = se.table(steps, se.test_scores(steps, None), se.spreads_of(steps))
    assert (
        "| bbh_date/seed2 | 1 | adds | 4 / 0 | 0.062 | accepted | 0.000 -> 0.500 | (b) 0.50 -> (a) 0.75 |"
        in lines
    )
    assert (
        "| bbh_date/seed2 | 2 | swaps | 1 / 0 | 0.500 | accepted | 0.500 -> 0.250 | (a) 0.75 -> (a) 1.00 |"
        in lines
    )
    # both steps raised the share of the label the answers give most (0.50 -> 0.75 -> 1.00)
    assert lines[-2:] == [
        "| adds, answers gathered (top share rose) | 1 | +0.500 | 1 / 0 (1.000) |",
        "| swaps, answers gathered (top share rose) | 1 | -0.250 | 0 / 1 (1.000) |",
    ]
