"""`skillgrad propose RUN` / `skillgrad adopt RUN [--undo]`: a trained skill becomes a proposal
against the skill the user has installed, and is installed only when the user says so.

propose writes `RUN/proposal/`: `SKILL.md` (what would be installed), `skill.diff` (unified diff
against the installed file), and `proposal.json` with the evidence: validation gain, the tasks that
improved and regressed (per task, the baseline against the best version), the run's cost, the
installed file's path and sha256 at proposal time. adopt refuses when the installed file changed
since, or when a task the current skill passes fails with the proposal (unless told to allow
regressions); it keeps the replaced file in `RUN/proposal/previous/` and installs atomically.
`adopt --undo` puts the previous file back (or removes the skill when there was none).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from skillgrad.atomic import write_json_atomic, write_text_atomic
from skillgrad.backends.workspace import FRONT_MATTER, skill_markdown
from skillgrad.errors import UserError
from skillgrad.package.model import is_package
from skillgrad.report.data import Run, load_run


def installed_skill_path(name: str, project: Path, home: Path) -> Path:
    """The project's `.claude/skills/<name>/SKILL.md` when it exists, else the user's."""
    local = project / ".claude" / "skills" / name / "SKILL.md"
    return local if local.is_file() else home / ".claude" / "skills" / name / "SKILL.md"


def _sha(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the installed skill ({type(exc).__name__})") from None


def skill_file(name: str, body: str, installed: str | None) -> str:
    """The SKILL.md to install: the body with its own front matter, else the installed file's, else
    a new one naming the skill (Claude Code needs `name` and `description`)."""
    if FRONT_MATTER.match(body):
        return body if body.endswith("\n") else body + "\n"
    match = FRONT_MATTER.match(installed or "")
    if not match:
        return skill_markdown(name, body)  # the front matter every installed skill of ours gets
    return f"{match.group(0).rstrip()}\n\n{body.strip()}\n"


def _body(skill: str | None) -> str:
    text = skill or ""
    match = FRONT_MATTER.match(text)
    return (text[match.end() :] if match else text).strip()


def _per_task(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    """(improved, regressed, known): per-task val scores of the baseline against the best version."""
    step = run.summary.get("best_step")
    base, best = run.set_for("val", step=0), run.set_for("val", step=step if isinstance(step, int) else -1)
    if base is None or best is None or not step:
        return [], [], False
    before = {t.task_id: t for t in base.tasks}
    improved, regressed = [], []
    for task in best.tasks:
        old = before.get(task.task_id)
        if old is None or old.score is None or task.score is None:
            continue
        row = {
            "task": task.task_id,
            "question": task.question[:200],
            "before": old.score,
            "after": task.score,
        }
        if old.passed and not task.passed:
            regressed.append({**row, "feedback": task.feedback[:300]})
        elif task.score > old.score or (task.passed and not old.passed):
            improved.append(row)
    return improved, regressed, True


def propose(run_dir: Path, target: Path) -> dict[str, Any]:
    run = load_run(run_dir)
    if not run.summary or run.best_skill is None:
        raise UserError(
            f"{run_dir}: the run has no summary.json or best_skill.md yet; let it finish (or --resume it)"
        )
    if is_package(run.best_skill):
        raise UserError(
            f"{run_dir}: the run trained a skill package; a proposal replaces one SKILL.md, so copy "
            f"{run_dir / 'best_skill'} into place yourself"
        )
    if run.summary.get("best_version") in (None, "v0000"):
        raise UserError(
            f"{run_dir}: the run found no skill better than its initial one "
            f"(val {run.summary.get('baseline_val_score')}); nothing to propose"
        )
    name = str((run.config.get("skill") or {}).get("name") or "task-skill")
    installed = _read(target)
    proposed = skill_file(name, run.best_skill, installed)
    improved, regressed, known = _per_task(run)
    baseline, best = run.summary.get("baseline_val_score"), run.summary.get("best_val_score")
    evidence = {
        "skill_name": name,
        "installed_path": str(target),
        "installed_sha256": _sha(installed),
        "trained_from_installed": _body(installed) == _body(run.skills.get("v0000")),
        "best_version": run.summary.get("best_version"),
        "val_baseline": baseline,
        "val_best": best,
        "val_gain": (best - baseline)
        if isinstance(best, int | float) and isinstance(baseline, int | float)
        else None,
        "per_task_known": known,
        "improved": improved,
        "regressed": regressed,
        "usage": run.summary.get("usage"),
        "proposed_sha256": _sha(proposed),
    }
    folder = run_dir / "proposal"
    diff = difflib.unified_diff(
        (installed or "").splitlines(keepends=True),
        proposed.splitlines(keepends=True),
        fromfile=f"installed/{name}/SKILL.md" if installed is not None else "/dev/null",
        tofile=f"proposed/{name}/SKILL.md",
    )
    write_text_atomic(folder / "SKILL.md", proposed)
    write_text_atomic(folder / "skill.diff", "".join(diff))
    write_json_atomic(folder / "proposal.json", evidence)
    return evidence


def _proposal(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "proposal" / "proposal.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no proposal; run `skillgrad propose {run_dir}` first") from None
    except (OSError, ValueError) as exc:
        raise UserError(
            f"{path}: unreadable proposal ({type(exc).__name__}); run `skillgrad propose` again"
        ) from None
    if not isinstance(data, dict) or "installed_path" not in data:
        raise UserError(f"{path}: not a skillgrad proposal; run `skillgrad propose {run_dir}` again")
    return data


def adopt(run_dir: Path, *, allow_regressions: bool = False) -> Path:
    evidence = _proposal(run_dir)
    target = Path(evidence["installed_path"])
    current = _read(target)
    if _sha(current) != evidence["installed_sha256"]:
        raise UserError(f"{target}: changed since the proposal; run `skillgrad propose {run_dir}` again")
    if evidence["regressed"] and not allow_regressions:
        ids = ", ".join(r["task"] for r in evidence["regressed"][:5])
        raise UserError(
            f"proposal breaks {len(evidence['regressed'])} task(s) the current skill passes ({ids}); "
            "see proposal.json, or pass --allow-regressions"
        )
    proposed = (run_dir / "proposal" / "SKILL.md").read_text(encoding="utf-8")
    if _sha(proposed) != evidence["proposed_sha256"]:
        raise UserError(f"{run_dir / 'proposal' / 'SKILL.md'}: edited after the proposal; run propose again")
    previous = run_dir / "proposal" / "previous"
    write_json_atomic(previous / "previous.json", {"path": str(target), "existed": current is not None})
    if current is not None:
        write_text_atomic(previous / "SKILL.md", current)
    write_text_atomic(target, proposed)
    return target


def undo(run_dir: Path) -> Path:
    previous = run_dir / "proposal" / "previous"
    try:
        info = json.loads((previous / "previous.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise UserError(f"{run_dir}: nothing to undo; `skillgrad adopt {run_dir}` was not run") from None
    target = Path(info["path"])
    if info.get("existed"):
        write_text_atomic(target, (previous / "SKILL.md").read_text(encoding="utf-8"))
    else:
        target.unlink(missing_ok=True)
    (previous / "previous.json").unlink()
    return target
