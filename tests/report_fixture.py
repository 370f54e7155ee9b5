"""Writes a realistic fake run folder (the trainer's format) for report, progress and tracking tests.

`make_run(root)` builds `root/<name>/` with config, skill versions, history, summary, per-step
artifacts, rollouts with Claude Code traces (one with a failing tool call) and a test split.
`hostile=True` puts HTML/JS into answers, feedback, traces and the skill to test escaping.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'

TASKS = [
    ("q01", "Which river flows through Vienna?", "Danube"),
    ("q02", "Who wrote 'The Trial'?", "Franz Kafka"),
    ("q03", "What is the capital of Australia?", "Canberra"),
    ("q04", "In which year did the Berlin Wall fall?", "1989"),
    ("q05", "What is the chemical symbol for tungsten?", "W"),
    ("q06", "Which planet has the moon Titan?", "Saturn"),
]

SKILL_V0 = """# Answering questions

Read the task in `task.md` and answer the question.

<!-- protected:start -->
Always write the final answer on its own last line.
<!-- protected:end -->
"""

EDITS = [
    ("add", "## Answer format", "Give only the short answer span, no full sentence."),
    ("replace", "Read the task", "Read `task.md` fully, including the context, before answering."),
    ("add", "## Checking", "Quote the sentence of the context that supports the answer to yourself first."),
    ("add", "## Names", "For people, give the full name as written in the context."),
]


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def _usage(rng: random.Random, calls: int) -> dict[str, Any]:
    tin, tout = rng.randint(800, 4000) * calls, rng.randint(100, 900) * calls
    return {
        "input_tokens": tin,
        "output_tokens": tout,
        "calls": calls,
        "cost_usd": round(tin * 3e-6 + tout * 15e-6, 6),
    }


def _trace(answer: str, failing: bool, hostile: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"kind": "text", "text": "I'll read the task first.", "tool": None, "is_error": False},
        {"kind": "tool_call", "text": "file_path=task.md", "tool": "Read", "is_error": False},
        {
            "kind": "tool_result",
            "text": "# Task\nAnswer the question using the context.",
            "tool": "Read",
            "is_error": False,
        },
    ]
    if failing:
        steps += [
            {
                "kind": "tool_call",
                "text": "command=grep -n answer notes.txt",
                "tool": "Bash",
                "is_error": False,
            },
            {
                "kind": "tool_result",
                "text": "grep: notes.txt: No such file or directory (exit code 2)",
                "tool": "Bash",
                "is_error": True,
            },
        ]
    if hostile:
        steps.append({"kind": "text", "text": f"Thinking about {HOSTILE}", "tool": None, "is_error": False})
    steps.append({"kind": "text", "text": f"The answer is:\n{answer}", "tool": None, "is_error": False})
    return steps


def _render_trace(steps: list[dict[str, Any]]) -> str:
    lines = []
    for i, s in enumerate(steps, 1):
        label = s["kind"] if s["tool"] is None else f"{s['kind']} {s['tool']}"
        label += " ERROR" if s["is_error"] else ""
        lines.append(f"{i}. [{label}] {s['text']}")
    return "\n".join(lines)


def _rollouts(folder: Path, rng: random.Random, quality: float, agent: bool, hostile: bool) -> float:
    """Write one rollout set; returns its mean score."""
    scores = []
    for n, (tid, question, expected) in enumerate(TASKS):
        ok = rng.random() < quality
        answer = expected if ok else ("Paris" if n % 2 else "I could not find the answer.")
        if hostile and n == 0:
            answer = HOSTILE
        value = 1.0 if ok else round(rng.choice([0.0, 0.0, 0.4]), 2)
        feedback = "exact match" if ok else f"expected one of {[expected]}; the answer did not match"
        if hostile and n == 1:
            feedback = f"feedback {HOSTILE}"
        d = folder / tid
        _write(d / "answer.txt", answer)
        is_error = agent and n == 5 and not ok
        _write(
            d / "score.json",
            {
                "value": value,
                "passed": ok,
                "feedback": feedback,
                "answer": answer,
                "expected": [expected],
                "is_error": is_error,
                "error": "claude_code_exec: max turns reached" if is_error else None,
                "usage": _usage(rng, 1),
            },
        )
        _write(
            d / "task.json",
            {
                "id": tid,
                "question": question,
                "context": f"Context for {question}",
                "answers": [expected],
                "meta": {},
            },
        )
        if agent:
            steps = _trace(answer, failing=(n == 2), hostile=hostile and n == 0)
            _write(d / "trace.json", steps)
            _write(d / "claude_trace_steps.txt", _render_trace(steps))
        _write(d / "transcript.jsonl", json.dumps({"type": "result", "result": answer}) + "\n")
        scores.append(value)
    return round(sum(scores) / len(scores), 4)


def _bucket(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Usage records summed the way the trainer's ledger writes them (known_usd, unknown calls)."""
    out = {k: sum(p[k] for p in parts) for k in ("input_tokens", "output_tokens", "calls")}
    out["known_usd"] = round(sum(p["cost_usd"] for p in parts), 6)
    out["unknown_cost_calls"] = 0
    return out


def _ledger(by_stage: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """summary.json's usage: total, by_role, by_stage (flat), by_role_stage ("role/stage")."""
    stages = sorted({stage for per_role in by_stage.values() for stage in per_role})
    return {
        "total": _bucket([u for per_role in by_stage.values() for u in per_role.values()]),
        "by_role": {role: _bucket(list(per_role.values())) for role, per_role in by_stage.items()},
        "by_stage": {st: _bucket([r[st] for r in by_stage.values() if st in r]) for st in stages},
        "by_role_stage": {
            f"{role}/{st}": _bucket([u]) for role, r in by_stage.items() for st, u in r.items()
        },
    }


def _apply(skill: str, op: str, target: str, content: str) -> str:
    if op == "replace" and target in skill:
        line = next(x for x in skill.splitlines() if target in x)
        return skill.replace(line, content)
    return skill.rstrip("\n") + f"\n\n{target}\n\n{content}\n"


def _config(seed: int, with_test: bool, target_backend: str) -> dict[str, Any]:
    return {
        "benchmark": {"name": "qa", "data": "items.jsonl", "train_size": 12, "val_size": 6,
                      "test_size": 6 if with_test else 0, "seed": seed},
        "skill": {"init": "skills/initial.md"},
        "model": {"backend": "openai_chat", "optimizer_backend": "openai_chat",
                  "target_backend": target_backend, "optimizer_model": "gpt-4.1",
                  "target_model": "claude-sonnet-4-5", "api_key": "**redacted**"},
        "train": {"epochs": 2, "batch_size": 4, "minibatch_size": 2, "concurrency": 4},
        "optimizer": {"learning_rate": 4, "min_learning_rate": 2, "lr_schedule": "cosine"},
        "budget": {"max_usd": 5.0, "max_tokens": None, "max_calls": None},
        "tracking": {"mlflow": False, "mlflow_uri": None},
    }  # fmt: skip


def _edits(step: int) -> list[dict[str, Any]]:
    op, target, content = EDITS[(step - 1) % len(EDITS)]
    return [
        {"op": op, "target": target, "content": content, "rationale": f"tasks failed at step {step}",
         "status": "applied", "reason": "applied"},
        {"op": "delete", "target": "does not exist", "content": "", "rationale": "cleanup",
         "status": "skipped", "reason": "target text not found"},
    ]  # fmt: skip


def _write_step(d: Path, edits: list[dict[str, Any]], candidate: str, val: float, current: float) -> None:
    plain = [{k: e[k] for k in ("op", "target", "content", "rationale")} for e in edits]
    _write(d / "merged_patch.json", {"edits": plain})
    _write(d / "candidate_skill.md", candidate)
    ok = val > current
    _write(d / "gate.json", {
        "candidate_score": val, "current_score": current, "accepted": ok,
        "reason": "improved" if ok else "not better than current (ties rejected)", "cached": False,
    })  # fmt: skip
    _write(d / "edit_report.json", [
        {"edit": p, "status": e["status"], "reason": e["reason"]} for p, e in zip(plain, edits, strict=True)
    ])  # fmt: skip


def _add_stage_usage(by_stage: dict[str, dict[str, dict[str, Any]]], usage: dict[str, Any]) -> None:
    """Spread one step's usage by role over the stages that role ran."""
    for role, stages in (("optimizer", ("reflect", "merge", "rank")), ("target", ("rollout", "validate"))):
        for stage in stages:
            prev = by_stage[role].get(
                stage, {"input_tokens": 0, "output_tokens": 0, "calls": 0, "cost_usd": 0}
            )
            part = usage[role]
            by_stage[role][stage] = {
                k: round(prev[k] + part[k] / len(stages), 6)
                if k == "cost_usd"
                else prev[k] + part[k] // len(stages)
                for k in prev
            }


@dataclass
class _State:
    skill: str
    current: float
    best: float
    quality: float = 0.45
    best_version: str = "v0000"
    best_step: int = 0
    accepted: int = 0
    rejected: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    by_stage: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {"optimizer": {}, "target": {}}
    )


def _step(
    out: Path, st: _State, step: int, steps: int, rng: random.Random, agent: bool, hostile: bool
) -> None:
    d = out / f"steps/{step:04d}"
    train = _rollouts(d / "rollouts/train", rng, st.quality, agent, hostile)
    edits = _edits(step)
    candidate = _apply(st.skill, edits[0]["op"], edits[0]["target"], edits[0]["content"])
    trial_quality = st.quality + (0.15 if step % 2 == 1 else -0.1)
    val = _rollouts(d / "rollouts/val", rng, trial_quality, agent, hostile)
    _write_step(d, edits, candidate, val, st.current)
    version, before = None, st.current
    if val > st.current:
        st.accepted += 1
        version = f"v{st.accepted:04d}"
        st.skill, st.current, st.quality = candidate, val, trial_quality
        st.versions[version] = candidate
        _write(out / f"skills/{version}.md", candidate)
        if val > st.best:
            st.best, st.best_version, st.best_step = val, version, step
    else:
        st.rejected += 1
    usage = {"optimizer": _usage(rng, 3), "target": _usage(rng, 12)}
    _add_stage_usage(st.by_stage, usage)
    st.history.append({
        "step": step, "epoch": 1 + (step - 1) * 2 // steps, "action": "accepted" if version else "rejected",
        "train_score": train, "val_score": val, "current_score": before, "best_score": st.best,
        "learning_rate": 4 - (step * 2) // steps, "version": version, "edits": edits, "usage": usage,
        "cached": False,
    })  # fmt: skip


def make_run(
    root: Path,
    name: str = "run",
    *,
    seed: int = 0,
    steps: int = 6,
    with_test: bool = True,
    agent: bool = True,
    hostile: bool = False,
) -> Path:
    """Write a complete fake run folder under `root/name` and return its path."""
    rng = random.Random(seed)
    out = root / name
    target_backend = "claude_code_exec" if agent else "openai_chat"
    _write(out / "config.json", _config(seed, with_test, target_backend))
    skill = SKILL_V0 + (f"\n{HOSTILE}\n" if hostile else "")
    _write(out / "skills/v0000.md", skill)
    baseline = _rollouts(out / "steps/0000/rollouts/val", rng, 0.45, agent, hostile)
    st = _State(skill, baseline, baseline, versions={"v0000": skill})
    for step in range(1, steps + 1):
        _step(out, st, step, steps, rng, agent, hostile)
    _write(out / "history.jsonl", "".join(json.dumps(h) + "\n" for h in st.history))
    _write(out / "best_skill.md", st.versions[st.best_version])
    test = None
    if with_test:
        tb = _rollouts(out / "test/v0000", rng, 0.45, agent, hostile)
        tt = _rollouts(out / f"test/{st.best_version}", rng, st.quality, agent, hostile)
        test = {"baseline": tb, "best": tt, "by_version": {"v0000": tb, st.best_version: tt}}
    _write(out / "summary.json", {
        "baseline_val_score": baseline, "best_val_score": st.best, "best_version": st.best_version,
        "best_step": st.best_step, "steps": steps, "accepted": st.accepted, "rejected": st.rejected,
        "stopped": "completed", "test": test, "optimizer_backend": "openai_chat",
        "target_backend": target_backend, "optimizer_model": "gpt-4.1", "target_model": "claude-sonnet-4-5",
        "wall_s": 812.4, "usage": _ledger(st.by_stage),
    })  # fmt: skip
    _write(out / "train.log", "run start\nrun end\n")
    return out


def run_events(run: Path) -> list[tuple[str, dict[str, Any]]]:
    """The event sequence a trainer would have emitted for the fake run (for observer tests)."""
    summary = json.loads((run / "summary.json").read_text())
    history = [json.loads(x) for x in (run / "history.jsonl").read_text().splitlines()]
    t = 0.0
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **fields: Any) -> None:
        nonlocal t
        t += 1.5
        events.append((kind, {**fields, "time": t}))

    totals: dict[str, dict[str, Any]] = {}
    emit(
        "run_start",
        out=str(run),
        epochs=2,
        steps_per_epoch=len(history) // 2,
        total_steps=len(history),
        optimizer_backend="openai_chat",
        target_backend=summary["target_backend"],
    )

    def stage(
        name: str, step: int, total: int, mean: float | None, epoch: int | None = None,
        label: str | None = None, **extra: Any,
    ) -> None:  # fmt: skip
        """A stage as the trainer reports it: its start, each task, its end with counts and time."""
        started = t
        tag = {"label": label} if label else {}
        emit("stage_start", stage=name, step=step, epoch=epoch, total=total, **tag)
        for i in range(1, total + 1):
            task = TASKS[i - 1][0] if name == "baseline" else f"t{i}"
            score = None if name == "reflect" else (1.0 if name == "baseline" else 0.5)
            emit("task_done", stage=name, step=step, done=i, total=total, task_id=task, score=score,
                 elapsed=t + 1.5 - started, **tag)  # fmt: skip
        end = {"done": total, "total": total, "failed": 0, "seconds": t + 1.5 - started}
        emit("stage_end", stage=name, step=step, mean_score=mean, **end, **tag, **extra)

    stage("baseline", 0, len(TASKS), summary["baseline_val_score"])
    for h in history:
        stage("rollout", h["step"], 4, 0.5, h["epoch"])
        stage("reflect", h["step"], 2, None, h["epoch"], edits=len(h["edits"]))
        stage("validate", h["step"], len(TASKS), 0.5, h["epoch"])
        if h["step"] == 2:
            emit("message", text="candidate identical to v0001: reusing its score")
        for role, u in h["usage"].items():  # the trainer emits running totals, not the step's usage
            prev = totals.get(role, {})
            totals[role] = {k: prev.get(k, 0) + v for k, v in u.items()}
        emit(
            "step_end",
            step=h["step"],
            epoch=h["epoch"],
            action=h["action"],
            val_score=h["val_score"],
            best_score=h["best_score"],
            current_score=h["current_score"],
            edits_applied=sum(e["status"] == "applied" for e in h["edits"]),
            usage={role: dict(u) for role, u in totals.items()},
            version=h["version"],
        )
    if summary["test"]:  # the final test passes, named by version
        last, best = history[-1]["step"], summary["best_version"]
        stage("test", last, len(TASKS), summary["test"]["baseline"], label="v0000 (initial)")
        stage("test", last, len(TASKS), summary["test"]["best"], label=f"{best} (best)")
    emit(
        "run_end",
        best_score=summary["best_val_score"],
        baseline_score=summary["baseline_val_score"],
        stopped="completed",
        usage={
            role: {
                **{k: u[k] for k in ("input_tokens", "output_tokens", "calls")},
                "cost_usd": u["known_usd"],
            }
            for role, u in summary["usage"]["by_role"].items()
        },
    )
    return events
