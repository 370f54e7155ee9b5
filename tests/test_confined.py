"""Issue 40, item 3, the class of the probe's case: whatever link an agent plants in the run
folder (in place of a folder of the run, of a file, of its own workspace, of the run folder
itself), no write of `RunDir` (nor the paid journal's) follows it out of the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillgrad.atomic import append_jsonl, read_jsonl_repairing
from skillgrad.redact import Redactor
from skillgrad.run_folder import RunDir, RunFiles
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import AgentResult, Rollout, Score, Task

SECRET = "sk-test-FAKE-confined-0123456789"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "rollouts" / "train" / "t1" / "workspace").mkdir(parents=True)
    (folder / "keep.txt").write_text(f"mine {SECRET}", encoding="utf-8")
    (folder / "rollouts" / "train" / "t1" / "workspace" / "keep.txt").write_text("mine", encoding="utf-8")
    return folder


def untouched(outside: Path) -> bool:
    files = sorted(str(p.relative_to(outside)) for p in outside.rglob("*") if p.is_file())
    return (
        files == ["keep.txt", "rollouts/train/t1/workspace/keep.txt"]
        and (outside / "keep.txt").read_text(encoding="utf-8") == f"mine {SECRET}"
    )


def run_in(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run", Redactor([SECRET]))
    run.create()
    return run


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():
        os.rename(link, link.with_name(link.name + ".gone"))
    link.symlink_to(target)


def test_a_folder_of_the_run_replaced_by_a_link_is_not_followed(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    plant(run.root / "steps" / "0001" / "reflections", outside)  # the probe's `ln -sfn OUTSIDE`
    run.write_json(run.reflection_path(1, "mb_00"), {"minibatch": 0})
    run.write_folder(run.reflection_workspace(1, "mb_01"), {"README.md": "read me"})
    reflections = run.root / "steps" / "0001" / "reflections"
    assert untouched(outside) and not reflections.is_symlink()
    assert json.loads((reflections / "mb_00.json").read_text(encoding="utf-8")) == {"minibatch": 0}
    assert (reflections / "mb_01" / "README.md").read_text(encoding="utf-8") == "read me"


def test_a_step_folder_linked_out_is_not_cleared_through(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    plant(run.root / "steps" / "0002", outside)  # a later step's folder, before its rollouts
    task = Task("t1", "q?")
    workspace = run.fresh_workspace(run.rollouts_dir(2, "train"), task)
    assert untouched(outside) and workspace.is_dir() and not any(workspace.iterdir())
    run.clear(run.rollouts_dir(2, "train"))
    assert untouched(outside)


def test_a_workspace_linked_out_is_neither_scrubbed_nor_kept(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    prefix = run.rollouts_dir(1, "train")
    task = Task("t1", "q?")
    workspace = run.fresh_workspace(prefix, task)
    os.rmdir(workspace)
    workspace.symlink_to(outside)  # the agent's own folder, swapped for a link after it ran
    rollout = Rollout(task, AgentResult("answer", workspace=workspace), Score(0.0, False, "no"))
    run.write_rollout(prefix, rollout, harness=True, caps=TraceCaps())
    assert untouched(outside)  # not redacted, not emptied, no link in it removed
    assert not workspace.exists() and (run.root / prefix / "t1" / RunFiles.SCORE).is_file()


def test_files_of_the_run_replaced_by_links_are_not_written_through(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    victim = outside / "keep.txt"
    for name in (RunFiles.HISTORY, RunFiles.SUMMARY, RunFiles.PAID):
        (run.root / name).symlink_to(victim)
    run.append_history({"step": 1})
    run.write_summary({"stopped": "completed"})
    append_jsonl(run.root / RunFiles.PAID, {"role": "target"})  # the paid journal's append
    (run.root / "torn.jsonl").symlink_to(victim)
    read_jsonl_repairing(run.root / "torn.jsonl")  # a torn tail is never cut through a link
    assert untouched(outside)
    assert read_jsonl_repairing(run.root / RunFiles.HISTORY) == [{"step": 1}]
    assert not (run.root / RunFiles.SUMMARY).is_symlink()


def test_the_run_folder_renamed_and_linked_keeps_its_writes(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    run.write_json("state.json", {"step": 0})
    os.rename(run.root, tmp_path / "moved")
    run.root.symlink_to(outside)  # the run's own name now leads out
    run.write_json("state.json", {"step": 1})
    part = run.part("description")
    part.write_json("state.json", {"step": 2})
    assert untouched(outside)
    assert json.loads((tmp_path / "moved" / "state.json").read_text(encoding="utf-8")) == {"step": 1}
    assert json.loads((tmp_path / "moved" / "description" / "state.json").read_text()) == {"step": 2}


def test_a_part_of_the_run_linked_out_is_not_followed(tmp_path: Path, outside: Path) -> None:
    run = run_in(tmp_path)
    plant(run.root / "description", outside)
    run.part("description").write_skill(0, "Be brief.\n")
    assert untouched(outside) and (run.root / "description" / "skills" / "v0000.md").is_file()
