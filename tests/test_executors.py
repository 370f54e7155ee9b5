"""Executors without a cluster: what a job carries (never a secret), the workspace round trip,
the runtime environment, the executor registry, and the CLI's answers when no cluster is there."""

from __future__ import annotations

import base64
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgrad.backends.interface import AgentResult, Usage
from skillgrad.benchmarks.contract import Task
from skillgrad.config import config_from_data
from skillgrad.errors import FatalBackendError, UserError
from skillgrad.executors.executor import EXECUTORS, open_executor
from skillgrad.executors.job import RolloutJob, job_for, restore_outcome, run_job, secret_env, worker_config
from skillgrad.executors.ray_cluster import import_ray, runtime_env
from skillgrad.executors.threads import ThreadExecutor
from tests.ray_cluster import free_port

KEY = "sk-test-FAKE-executor-5550123"


def cfg_for(backend: str = "openai_chat", **ray: object):
    data = {"model": {"backend": backend, "api_key": KEY, "base_url": "http://127.0.0.1:9/v1"}, "ray": ray}
    return config_from_data(data, "test")


class EditingAgent:
    """Reads task.md, writes an answer file and deletes a scratch file, like a harness would."""

    name, model = "fake", "fake-1"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        question = (workspace / "task.md").read_text(encoding="utf-8")
        (workspace / "out").mkdir()
        (workspace / "out" / "answer.txt").write_text(f"{skill}:{question}", encoding="utf-8")
        (workspace / "scratch.txt").unlink()
        return AgentResult(answer="done", usage=Usage(3, 2, 1, None), workspace=workspace)


class CrashingAgent:
    name, model = "crash", "c"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        raise RuntimeError("boom")


def test_a_job_and_the_worker_config_never_carry_the_api_key(tmp_path: Path) -> None:
    cfg = cfg_for()
    for key in ("api_key", "optimizer_api_key", "target_api_key"):
        setattr(cfg.model, key, KEY)
    (tmp_path / "task.md").write_text("q", encoding="utf-8")
    job = job_for(Task("t1", "q"), "skill", tmp_path)
    payload = pickle.dumps((worker_config(cfg), job))
    assert KEY.encode() not in payload and base64.b64encode(KEY.encode()) not in payload
    assert cfg.model.api_key_for("target") == KEY  # the driver's own config is untouched
    assert secret_env(cfg, {}) == {"OPENAI_API_KEY": KEY}


def test_secret_env_names_the_target_backends_variable() -> None:
    assert secret_env(cfg_for("claude_code_exec"), {}) == {"ANTHROPIC_API_KEY": KEY}
    keyless = cfg_for("anthropic_chat")
    keyless.model.api_key = None
    assert secret_env(keyless, {"ANTHROPIC_API_KEY": "from-env"}) == {"ANTHROPIC_API_KEY": "from-env"}
    assert secret_env(keyless, {}) == {}
    assert secret_env(cfg_for("local"), {"OPENAI_API_KEY": "x"}) == {}


def test_workspace_goes_to_the_worker_and_comes_back_exactly(tmp_path: Path) -> None:
    driver = tmp_path / "run" / "workspace"
    driver.mkdir(parents=True)
    (driver / "task.md").write_text("what?", encoding="utf-8")
    (driver / "scratch.txt").write_text("temp", encoding="utf-8")
    job = job_for(Task("t1", "what?"), "S", driver)
    assert isinstance(job, RolloutJob)
    outcome = run_job(EditingAgent(), pickle.loads(pickle.dumps(job)))  # as Ray would ship it
    assert outcome.result.workspace is None  # the worker's temporary folder means nothing here
    result = restore_outcome(outcome, driver, cfg_for())
    assert result.answer == "done" and result.usage == Usage(3, 2, 1, None) and result.workspace == driver
    assert sorted(p.relative_to(driver).as_posix() for p in driver.rglob("*") if p.is_file()) == [
        "out/answer.txt",
        "task.md",
    ]
    assert (driver / "out" / "answer.txt").read_text(encoding="utf-8") == "S:what?"


def test_a_crashing_agent_or_a_hostile_path_is_a_failed_result_not_an_exception(tmp_path: Path) -> None:
    crashed = run_job(CrashingAgent(), RolloutJob(Task("t", "q"), "", {}))
    assert crashed.result.is_error and "RuntimeError: boom" in (crashed.result.error or "")
    escaping = RolloutJob(Task("t", "q"), "", {"../evil.txt": base64.b64encode(b"x").decode()})
    assert run_job(EditingAgent(), escaping).result.is_error
    assert not (tmp_path.parent / "evil.txt").exists()
    back = restore_outcome(type(crashed)(AgentResult("a"), {"/etc/x": ""}), tmp_path, cfg_for())
    assert back.is_error and not (tmp_path / "etc").exists()


class RefusedAgent:
    name, model = "refused", "r"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        raise FatalBackendError(
            "openai_chat: authentication failed (HTTP 401): no; fix OPENAI_API_KEY (stop)"
        )


def test_a_fatal_error_on_a_worker_is_raised_again_in_the_driver(tmp_path: Path) -> None:
    """Issue 32, defect 6: not one task's failure but the run's stop, naming the key as configured."""
    outcome = pickle.loads(pickle.dumps(run_job(RefusedAgent(), RolloutJob(Task("t", "q"), "", None))))
    assert outcome.fatal is not None and outcome.files is None
    with pytest.raises(FatalBackendError, match=r"fix model\.api_key \(stop\)"):
        restore_outcome(outcome, tmp_path, cfg_for())  # the driver's key came from model.api_key
    keyless = cfg_for()
    keyless.model.api_key = None
    with pytest.raises(FatalBackendError, match="fix OPENAI_API_KEY"):  # ... or from the variable
        restore_outcome(outcome, tmp_path, keyless)


class _FakeRay:
    """What RayExecutor uses of the ray module, with a worker that never answers."""

    class exceptions:  # noqa: N801 - ray's own spelling
        class RayError(Exception):
            pass

        class GetTimeoutError(RayError):
            pass

    def __init__(self) -> None:
        self.waited: list[float | None] = []

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def remote(self, cls: type) -> object:
        class Actor:
            def options(self, **kwargs: object) -> Actor:
                return self

            def remote(self, cfg: object) -> object:
                worker = type("Worker", (), {})()
                worker.run = type("Run", (), {"remote": staticmethod(lambda job: "ref")})()  # type: ignore[attr-defined]
                return worker

        return Actor()

    def get(self, ref: object, timeout: float | None = None) -> object:
        self.waited.append(timeout)
        raise self.exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")


def test_a_worker_that_never_answers_is_a_failed_rollout_not_a_hang(tmp_path: Path) -> None:
    from skillgrad.executors.ray_cluster import RayExecutor, rollout_timeout_s

    ray = _FakeRay()
    cfg = cfg_for()
    executor = RayExecutor(ray, cfg)  # type: ignore[arg-type]
    result = executor.run(Task("t", "q"), "s", tmp_path / "no-workspace")
    assert result.is_error and "ray: the rollout failed on the cluster" in (result.error or "")
    assert "timed out" in (result.error or "")
    assert ray.waited == [rollout_timeout_s(cfg)]
    m = cfg.model
    assert rollout_timeout_s(cfg) >= (m.max_retries + 1) * max(m.timeout_s, m.claude_code_timeout_s)


def test_chat_targets_ship_no_workspace(tmp_path: Path) -> None:
    job = job_for(Task("t", "q"), "s", tmp_path / "never-created")
    assert isinstance(job, RolloutJob) and job.files is None


def test_runtime_env_ships_code_and_the_targets_extra_only_to_a_cluster() -> None:
    local = runtime_env(cfg_for(), {})
    assert local == {"env_vars": {"OPENAI_API_KEY": KEY}}
    remote = runtime_env(cfg_for(address="ray://head:10001"), {})
    assert Path(remote["py_modules"][0], "executors", "ray_cluster.py").is_file()
    assert any(req.startswith("openai") for req in remote["pip"])
    assert any(
        req.startswith("claude-agent-sdk")
        for req in runtime_env(cfg_for("claude_code_exec", address="auto"), {})["pip"]
    )
    assert "pip" not in runtime_env(cfg_for(address="auto", pip=[]), {})


def test_executor_names_map_in_one_place() -> None:
    assert set(EXECUTORS) == {"threads", "ray"}
    executor = open_executor(cfg_for())
    assert isinstance(executor, ThreadExecutor)
    agent = EditingAgent()
    assert executor.agent(agent) is agent


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_unreachable_cluster_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    report = cli("cluster", "--set", f"ray.address={address}")
    assert report.returncode == 1 and "nothing answers there" in report.stdout
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(f'{{"id": "{i}", "question": "q", "answers": ["x"]}}\n' for i in "ab"), encoding="utf-8"
    )
    out = tmp_path / "run"
    settings = [
        "--set", f"benchmark.data={data}", "--set", "benchmark.train_size=1", "--set", "benchmark.val_size=1",
        "--set", "model.backend=openai_chat", "--set", "model.base_url=http://127.0.0.1:9/v1",
    ]  # fmt: skip
    proc = cli("train", *settings, "--executor", "ray", "--set", f"ray.address={address}", "--out", str(out))
    assert proc.returncode == 2 and "ray.address" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert time.monotonic() - started < 60  # no minutes of Ray's own reconnecting


def test_bad_executor_settings_name_the_key() -> None:
    proc = cli("config", "--set", "ray.address=http://head")
    assert proc.returncode == 2 and "ray.address" in proc.stderr
    proc = cli("config", "--set", "train.executor=dask")
    assert proc.returncode == 2 and "train.executor" in proc.stderr and "threads" in proc.stderr


def test_backends_lists_the_ray_executor() -> None:
    proc = cli("backends")
    assert proc.returncode == 0
    assert any(
        line.startswith("executor ray") and "usable (ray 2." in line for line in proc.stdout.splitlines()
    )


def test_without_ray_the_ray_executor_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    assert import_ray().__name__ == "ray"
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: importing it raises
    with pytest.raises(UserError, match=r"^train.executor 'ray' needs Ray: pip install 'skillgrad\[ray\]'$"):
        import_ray()
