"""A skill package trained with a chat model as target (scripted OpenAI-compatible server): the
package goes into the system prompt flattened; the analyst grows it from one file to a file plus
a reference; an edit that copies a task's question is dropped and counted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import CAPITALS, GOOD_RULE, is_optimizer, read_json, skillgrad, write_config

POINTER = "- For the answer format, follow references/style.md."
COPY = "When asked what is the capital of France, answer Paris."
STYLE = f"# Answer style\n\n- {GOOD_RULE}\n"


def handler(request: Request):
    if is_optimizer(request):
        edits = [
            {"op": "create", "file": "references/style.md", "target": "", "content": STYLE, "rationale": "r"},
            {"op": "add", "file": "SKILL.md", "target": "end", "content": POINTER, "rationale": "r"},
            {"op": "add", "file": "SKILL.md", "target": "end", "content": COPY, "rationale": "r"},
        ]
        return json_reply({"edits": edits}, usage=(300, 40))
    country = request.user.split("capital of ")[1].split("?")[0]
    flattened = "## File: references/style.md" in request.system and GOOD_RULE in request.system
    return text(CAPITALS[country] if flattened else f"It is {CAPITALS[country]}, I think.", 20, 8)


def test_package_trains_on_a_chat_target(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# Capitals\n\n- Answer the question.\n", encoding="utf-8")
    with ScriptedOpenAI(handler) as server:
        cfg = write_config(tmp_path, server)
        sets = [
            "--set",
            f"skill.init={skill}",
            "--set",
            "optimizer.task_text_ngram=5",
            "--set",
            "optimizer.learning_rate=3",
        ]
        out = tmp_path / "run"
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), *sets)
        assert proc.returncode == 0, proc.stderr
        proc_out = proc.stdout
        targets = [r for r in server.requests if not is_optimizer(r)]
        again = skillgrad(
            "eval",
            "--config",
            str(cfg),
            "--skill",
            str(out / "best_skill"),
            "--out",
            str(tmp_path / "ev"),
            *sets,
        )
        assert again.returncode == 0, again.stderr
    summary = read_json(out / "summary.json")
    assert (
        summary["best_version"] == "v0001"
        and summary["best_val_score"] == 1.0 > summary["baseline_val_score"]
    )
    assert summary["task_text_copies"] == 1
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["dropped_counts"]["copies task text"] == 1
    copied = next(d for d in merged["dropped"] if d["dropped_because"] == "copies task text")
    assert copied["content"] == COPY and copied["detail"].startswith("task q")
    v1 = out / "skills" / "v0001"
    assert (v1 / "references" / "style.md").read_text(encoding="utf-8") == STYLE
    assert (
        POINTER in (v1 / "SKILL.md").read_text(encoding="utf-8") and COPY not in (v1 / "SKILL.md").read_text()
    )
    assert sorted(p.name for p in (out / "skills" / "v0000").iterdir()) == ["SKILL.md"]
    # the flattened package: SKILL.md first, then the reference under its path
    flat = next(r.system for r in targets if "references/style.md" in r.system)
    assert (
        flat.index("- Answer the question.")
        < flat.index("## File: references/style.md")
        < flat.index(GOOD_RULE)
    )
    assert json.loads((tmp_path / "ev" / "eval.json").read_text())["mean_score"] == 1.0
    proc = skillgrad("report", str(out))
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "step 1: v0000 → v0001 · references/style.md (new file)" in html
    assert "step 1: v0000 → v0001 · SKILL.md" in html
    assert f"best skill: {out / 'best_skill'}" in proc_out
    refused = skillgrad("propose", str(out), "--skill", str(tmp_path / "installed" / "SKILL.md"))
    assert refused.returncode == 2 and "trained a skill package" in refused.stderr
    assert not (out / "proposal").exists()


def test_a_candidate_whose_script_does_not_compile_is_skipped_with_the_reason(tmp_path: Path) -> None:
    def broken(request: Request):
        if is_optimizer(request):
            edit = {
                "op": "create",
                "file": "scripts/fmt.py",
                "target": "",
                "content": "def f(:\n",
                "rationale": "r",
            }
            return json_reply({"edits": [edit]}, usage=(300, 40))
        return text("It is Paris, I think.", 20, 8)

    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# Capitals\n", encoding="utf-8")
    with ScriptedOpenAI(broken) as server:
        cfg, out = write_config(tmp_path, server), tmp_path / "run"
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", f"skill.init={skill}")
        assert proc.returncode == 0, proc.stderr
        validations = [r for r in server.requests if not is_optimizer(r)]
    step = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()][0]
    assert step["action"] == "skipped"
    assert step["skip_reason"] == "scripts/fmt.py does not compile: line 1: invalid syntax"
    assert read_json(out / "steps" / "0001" / "gate.json")["reason"] == step["skip_reason"]
    assert len(validations) == 4 + 4 + 2  # baseline, train batch, test of v0000: the candidate never ran
    assert not (out / "steps" / "0001" / "rollouts" / "val").exists()
    assert (out / "steps" / "0001" / "candidate_skill" / "scripts" / "fmt.py").is_file()
    assert skillgrad("report", str(out)).returncode == 0
    assert "— scripts/fmt.py does not compile: line 1: invalid syntax" in (out / "report.html").read_text()
