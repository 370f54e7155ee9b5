"""`skillgrad.train` and `skillgrad.evaluate` from Python, against the scripted OpenAI server: a
benchmark object, a list of tasks, a JSONL path, dict and YAML configs; results that load back
and serialise; progress as callbacks; errors as exceptions, worded as the CLI words them."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad import AgentResult, Score, Task
from tests.api_world import FactsWorld, facts_server, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI, unauthorized


@pytest.fixture
def world() -> Iterator[tuple[dict[str, Any], FactsWorld, ScriptedOpenAI]]:
    with facts_server() as made:
        yield made


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=240, cwd=cwd
    )


class FactsBenchmark:
    """A benchmark object: the Benchmark protocol and nothing else (no config, no registry)."""

    name = "house-facts"

    def __init__(self, tasks: list[Task], scorer: Callable[[str, Task], Score]) -> None:
        self.tasks, self.scorer = sorted(tasks, key=lambda t: t.id), scorer

    def load(self, split: str) -> list[Task]:
        start = {"train": 0, "val": 1, "test": 2}[split]
        return self.tasks[start::5][:8]

    def score(self, task: Task, result: AgentResult) -> Score:
        return self.scorer(result.answer, task)


def test_train_with_a_benchmark_object(tmp_path: Path, world: Any) -> None:
    example, facts, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    bench = FactsBenchmark(example["house_tasks"](), example["score"])
    result = skillgrad.train(config, benchmark=bench, out=tmp_path / "run")

    assert result.run_dir == tmp_path / "run"
    assert result.baseline_val == 0.0 < result.best_val == 1.0 and result.val_gain == 1.0
    assert result.baseline_test == 0.0 < result.best_test == 1.0
    assert result.accepted >= 1 and result.stopped in ("completed", "no_headroom")
    assert result.steps == result.accepted + result.rejected + result.skipped
    assert result.best_skill.markdown == (tmp_path / "run" / "best_skill.md").read_text(encoding="utf-8")
    assert not result.best_skill.is_package and result.best_skill.files == {
        "SKILL.md": result.best_skill.text
    }
    usage = result.usage.by_role
    assert usage["target"].calls == facts.asked.count("target") and usage["optimizer"].calls > 0
    assert usage["optimizer"].input_tokens == 300 * usage["optimizer"].calls
    assert result.usage.total.calls == len(facts.asked)
    assert usage["target"].cost_usd is None  # the fake model has no price: unknown, not $0
    assert usage["target"].unknown_cost_calls == usage["target"].calls

    # serialisable, and the same when read back from the run folder
    again = skillgrad.TrainResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result == skillgrad.TrainResult.load(tmp_path / "run")
    # the run folder says where its tasks came from; the CLI cannot resume it, and says why
    stored = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert stored["benchmark"]["name"] == "python:house-facts"
    (tmp_path / "x.md").write_text("Be brief.\n", encoding="utf-8")
    proc = cli("eval", "--config", str(tmp_path / "run" / "config.json"), "--skill", str(tmp_path / "x.md"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "skillgrad.train(" in proc.stderr


def test_train_with_a_list_of_tasks_and_a_scorer_defined_here(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    seen: list[str] = []

    def contains_value(answer: str, task: Task) -> float:  # a float is the value; 1.0 passes
        seen.append(task.id)
        return 1.0 if task.answers[0] in answer else 0.25

    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    result = skillgrad.train(config, benchmark=example["house_tasks"](), scorer=contains_value,
                             skill="Answer in one sentence.", out=tmp_path / "run")  # fmt: skip
    assert sorted(set(seen)) == sorted(t.id for t in example["house_tasks"]())  # train, val and test
    assert result.baseline_val == 0.25  # no fact stated: every answer scores 0.25
    # its feedback names the scorer, and reaches the analyst
    score = json.loads(next((tmp_path / "run").glob("steps/0000/rollouts/val/*/score.json")).read_text())
    assert score["feedback"].startswith("scorer test_train_with_a_list_of_tasks_and_a_scorer_defined_here.")
    assert (tmp_path / "run" / "skills" / "v0000.md").read_text(encoding="utf-8") == "Answer in one sentence."
    assert json.loads((tmp_path / "run" / "config.json").read_text())["skill"]["init"] is None


def test_a_yaml_config_with_a_jsonl_path_and_a_scorer_by_name_resumes_from_the_cli(
    tmp_path: Path, world: Any
) -> None:
    example, _, server = world
    data = tmp_path / "facts.jsonl"
    rows = [
        {"id": t.id, "question": t.question, "answers": list(t.answers)} for t in example["house_tasks"]()
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    yaml_path = tmp_path / "config.yaml"
    yaml_path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML

    result = skillgrad.train(yaml_path, benchmark=data, scorer="contains", out=tmp_path / "run")
    stored = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))["benchmark"]
    assert stored["name"] == "custom" and stored["data"] == str(data) and stored["scorer"] == "contains"
    assert result.baseline_val == 0.0 and result.best_skill.text == ""  # its feedback states no fact
    proc = cli("train", "--resume", str(tmp_path / "run"))
    assert proc.returncode == 0 and "this run is finished, nothing to resume" in proc.stdout, proc.stderr
    # the CLI on the same config, with a folder relative to where it runs: it says the folders as typed
    proc = cli("train", "--config", str(tmp_path / "run" / "config.json"), "--out", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run holds an earlier run (`--resume run` continues it); this run writes to run-2" in proc.stdout
    assert proc.stdout.rstrip().endswith("skillgrad report run-2")
    assert skillgrad.TrainResult.load(tmp_path / "run-2").best_skill.text == result.best_skill.text


def test_a_bad_config_raises_the_line_the_cli_prints(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  epochs: many\n", encoding="utf-8")
    with pytest.raises(skillgrad.UserError) as raised:
        skillgrad.train(bad, out=tmp_path / "run")
    proc = cli("train", "--config", str(bad), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and proc.stderr == f"skillgrad: error: {raised.value}\n"
    assert "train.epochs" in str(raised.value) and raised.value.run_dir is None

    with pytest.raises(skillgrad.UserError, match=r"^config: unknown key 'train\.epoch'; allowed here: "):
        skillgrad.train({"train": {"epoch": 1}}, out=tmp_path / "run")
    with pytest.raises(skillgrad.UserError, match=r"benchmark\[1\]: str is not a skillgrad\.Task"):
        skillgrad.train({}, benchmark=[Task("a", "q?", answers=("x",)), "b"], scorer="exact")
    with pytest.raises(skillgrad.UserError, match="pass scorer="):
        skillgrad.train({}, benchmark=[Task("a", "q?", answers=("x",))], out=tmp_path / "run")
    skill_file = tmp_path / "SKILL.md"
    skill_file.write_text("Be brief.\n", encoding="utf-8")
    with pytest.raises(skillgrad.UserError, match=r"pass pathlib\.Path\("):
        skillgrad.evaluate({}, str(skill_file))
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    """The API checks `out=` as the CLI checks --out: a UserError naming it, nothing written."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n", encoding="utf-8")
    tasks = [Task("a", "q?", answers=("x",))]
    with pytest.raises(
        skillgrad.UserError, match=r"^out .*notes\.txt: is a file, not a folder; pass a folder"
    ):
        skillgrad.train({}, benchmark=tasks, scorer="exact", out=notes)
    with pytest.raises(skillgrad.UserError, match=r"^out .*notes\.txt/run: .*notes\.txt is a file, so a run"):
        skillgrad.train({}, benchmark=tasks, scorer="exact", out=notes / "run")
    with pytest.raises(skillgrad.UserError, match=r"^out .*notes\.txt: is a file, not a run folder"):
        skillgrad.train({}, benchmark=tasks, scorer="exact", out=notes, resume=True)
    with pytest.raises(skillgrad.UserError, match=r"^out .*notes\.txt: is a file, not a folder"):
        skillgrad.evaluate({}, "Be brief.", split="val", benchmark=tasks, scorer="exact", out=notes)
    assert notes.read_text(encoding="utf-8") == "mine\n" and sorted(tmp_path.iterdir()) == [notes]


def test_errors_are_exceptions_that_name_the_run_folder(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    server.handler = lambda request: unauthorized()
    with pytest.raises(skillgrad.FatalBackendError) as raised:
        skillgrad.train(
            config, benchmark=example["house_tasks"](), scorer=example["score"], out=tmp_path / "run"
        )
    assert raised.value.run_dir == tmp_path / "run"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["stopped"] == "error"

    server.handler = FactsWorld(example["FACTS"])
    config["budget"] = {"max_calls": 3}
    with pytest.raises(skillgrad.BudgetExceeded) as budget:
        skillgrad.evaluate(config, "Be brief.", split="val", benchmark=example["house_tasks"](),
                           scorer=example["score"], out=tmp_path / "eval")  # fmt: skip
    assert budget.value.run_dir == tmp_path / "eval"
    assert "budget.max_calls" in json.loads((tmp_path / "eval" / "eval.json").read_text())["error"]


def test_observers_get_the_events_the_cli_prints(
    tmp_path: Path, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    events: list[skillgrad.Event] = []
    printed = io.StringIO()
    kwargs: dict[str, Any] = {"benchmark": example["house_tasks"](), "scorer": example["score"]}
    first = skillgrad.train(config, out=tmp_path / "run", observers=[events.append], **kwargs)

    # observers get every event, each task's among them; train.log and the printer a line per
    # stage start and end (a fast stage prints no task's line), each stage's with counts and time
    assert events[0].kind == "run_start" and events[-1].kind == "run_end"
    assert {"stage_start", "task_done", "stage_end", "step_end"} <= {e.kind for e in events}
    lines = [e for e in events if e.kind != "task_done"]
    logged = (tmp_path / "run" / "train.log").read_text(encoding="utf-8").splitlines()
    assert [e.kind for e in lines] == [line.split()[3] for line in logged]
    assert all(e.line.split("] ", 1)[1] in line for e, line in zip(lines, logged, strict=True))
    printed_by_default = capsys.readouterr().out.splitlines()  # a pipe: the printer's lines
    assert [line.split("] ", 1)[1] for line in printed_by_default] == [
        e.line.split("] ", 1)[1] for e in lines
    ]
    step = next(e for e in events if e.kind == "step_end")
    assert step.fields["action"] in ("accepted", "rejected", "skipped") and step.time >= 0
    # the reflect stage counts its analyst calls; each stage ends with its count and duration
    reflected = [e for e in events if e.kind == "task_done" and e.fields["stage"] == "reflect"]
    assert reflected and reflected[-1].fields["done"] == reflected[-1].fields["total"]
    ends = [e for e in events if e.kind == "stage_end"]
    assert all(e.fields["done"] == e.fields["total"] and e.fields["seconds"] >= 0 for e in ends)
    assert re.search(r"step 1 reflect: done, (\d+)/\1 analyst calls in \d+\.\ds", "\n".join(logged))
    # a racing validation split in waves names each wave; together they run the val items once
    waves = re.findall(r"step 2 validate \(wave (\d)\): started, (\d+) tasks", "\n".join(logged))
    assert [w for w, _ in waves] == ["1", "2"] and sum(int(n) for _, n in waves) == 12, waves
    assert "step 1 validate: started, 12 tasks" in "\n".join(logged)  # one wave: no wave named
    # the final test passes are named by the version they test
    tests = [e.fields.get("label") for e in events if e.kind == "stage_start" and e.fields["stage"] == "test"]
    assert tests == ["v0000 (initial)", f"{first.best_version} (best)"], tests
    assert any(f"test {first.best_version} (best): done, 16/16 tasks in" in line for line in logged)

    # the same out again: a numbered folder, said first; the printer prints what the CLI prints
    events.clear()
    second = skillgrad.train(config, out=tmp_path / "run", observers=[events.append,
                             skillgrad.progress_printer(printed)], quiet=True, **kwargs)  # fmt: skip
    assert second.run_dir == tmp_path / "run-2" and second.best_skill.text == first.best_skill.text
    assert events[0].kind == "message" and "this run writes to" in events[0].fields["text"]
    assert printed.getvalue().splitlines() == [e.line for e in events if e.kind != "task_done"]
    assert re.match(r"^\[\s+\d+\.\ds\] run start", printed.getvalue().splitlines()[1])
    assert capsys.readouterr().out == ""  # quiet: nothing printed but by the caller's printer
    assert second.usage.total.calls == 0 and second.usage.saved.calls == first.usage.total.calls  # cached


def test_evaluate_a_skill_package_and_load_the_result(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    folder = tmp_path / "skill"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text("Our build command is make ship.\n", encoding="utf-8")
    (folder / "references" / "notes.md").write_text("Our staging server is stage7.quokka.dev.\n", "utf-8")
    package = skillgrad.Skill.read(folder)
    assert package.is_package and set(package.files) == {"SKILL.md", "references/notes.md"}

    result = skillgrad.evaluate(config, folder, benchmark=example["house_tasks"](), scorer=example["score"],
                                out=tmp_path / "eval")  # fmt: skip
    passed = {t.task_id.split("-")[0] for t in result.tasks if t.passed}
    assert passed == {"build", "staging"}  # the package is flattened into the chat target's prompt
    assert result.skill == str(folder) and result.n == 16 and result.errors == 0
    assert result == skillgrad.EvalResult.load(tmp_path / "eval")
    assert result == skillgrad.EvalResult.from_json(json.loads(json.dumps(result.to_json())))
    saved = package.save(tmp_path / "copy")
    assert skillgrad.Skill.read(saved).text == package.text
