"""`skillgrad train` against the scripted OpenAI server: edits that land.

The analyst first answers with the old failure (a replace whose target is the agent's wrong
answer, absent from the skill), is re-asked by the schema, then proposes an edit that cannot apply
ahead of the one that can: at learning rate 1 the valid one is selected and accepted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import (
    GOOD_RULE,
    history,
    is_optimizer,
    read_json,
    skillgrad,
    target_answer,
    write_config,
)

SKILL = "# Capitals\n\nAnswer the question.\n"
WRONG_ANSWER = "I believe the capital of France is probably Paris, as far as I know."


def analyst_edits(request: Request) -> list[dict]:
    """The old failure first (a target that is not a line of the skill), then after the re-ask an
    inapplicable edit ranked ahead of the valid one."""
    if "could not be used" not in request.user:
        return [{"content": "Paris", "op": "replace", "target": WRONG_ANSWER, "rationale": "extra words"}]
    return [
        {"content": "answer the  question.", "op": "add", "target": "end", "rationale": "already there"},
        {"content": GOOD_RULE, "op": "add", "target": "Answer the question.", "rationale": "extra words"},
    ]


def train(tmp_path: Path, handler, *overrides: str) -> tuple[Path, list[Request]]:
    skill = tmp_path / "skill.md"
    skill.write_text(SKILL, encoding="utf-8")
    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        cfg = write_config(tmp_path, server, batch_size=4, minibatch_size=4)
        sets = [
            "optimizer.learning_rate=1",
            "optimizer.min_learning_rate=1",
            f"skill.init={skill}",
            *overrides,
        ]
        args = [a for s in sets for a in ("--set", s)]
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), *args)
        assert proc.returncode == 0, proc.stderr
        return out, [r for r in server.requests if is_optimizer(r)]


def test_valid_edit_is_selected_at_learning_rate_one(tmp_path: Path) -> None:
    def handler(request: Request):
        if is_optimizer(request):
            return json_reply({"edits": analyst_edits(request)}, usage=(300, 40))
        return text(target_answer(request), 20, 8)

    out, analyst = train(tmp_path, handler)
    # The schema sent to the server lists the skill's lines as the only targets.
    schema = analyst[0].response_format["json_schema"]["schema"]
    variants = schema["properties"]["edits"]["items"]["anyOf"]
    replace = next(v for v in variants if v["properties"]["op"]["enum"] == ["replace"])
    assert replace["properties"]["target"]["enum"] == ["# Capitals", "Answer the question."]
    assert WRONG_ANSWER in analyst[0].user and "could not be used" in analyst[1].user  # re-asked once
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["learning_rate"] == 1 and merged["proposed"] == 2
    assert [e["content"] for e in merged["selected"]] == [GOOD_RULE]
    assert merged["dropped_counts"]["cannot apply to the current skill"] == 1
    assert merged["dropped"][0]["detail"] == "content already present in the skill"
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is True
    assert (out / "best_skill.md").read_text(
        encoding="utf-8"
    ) == f"# Capitals\n\nAnswer the question.\n{GOOD_RULE}\n"
    assert history(out)[0]["dropped"]["cannot apply to the current skill"] == 1
    report = skillgrad("report", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "dropped before selection: 1 cannot apply to the current skill</div>" in html


def test_several_proposals_are_sampled_and_add_support(tmp_path: Path) -> None:
    good = {"content": GOOD_RULE, "op": "add", "target": "end", "rationale": "extra words"}

    def handler(request: Request):
        if is_optimizer(request):
            hot = request.get("temperature", 0) > 0
            other = {"content": f"Answer in {'few' if hot else 'short'} words.", "op": "add", "target": "end"}
            return json_reply({"edits": [{**other, "rationale": "r"}, good]})
        return text(target_answer(request), 20, 8)

    out, analyst = train(
        tmp_path, handler, "optimizer.proposals_per_minibatch=3", "optimizer.proposal_temperature=0.9"
    )
    assert sorted(r.get("temperature") for r in analyst) == [0.0, 0.9, 0.9]  # one minibatch, three proposals
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["proposed"] == 6 and merged["merged"] == 3
    assert merged["selected"][0]["content"] == GOOD_RULE and merged["selected"][0]["support"] == 3
    reflections = sorted(p.name for p in (out / "steps" / "0001" / "reflections").iterdir())
    assert reflections == ["mb_00.json", "mb_00_p1.json", "mb_00_p2.json"]
    assert json.loads((out / "steps" / "0001" / "reflections" / "mb_00_p2.json").read_text())["proposal"] == 2


def test_rewrite_mode_diffs_the_revised_skill_into_edits(tmp_path: Path) -> None:
    revised = f"# Capitals\n\n{GOOD_RULE}\nNever guess.\n"

    def handler(request: Request):
        if is_optimizer(request):
            assert request.response_format is None and "<skill>" in request.user
            return text(f"Here is the revision.\n<skill>\n{revised}</skill>")
        return text(target_answer(request), 20, 8)

    out, _ = train(tmp_path, handler, "optimizer.edit_mode=rewrite")
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert [(e["op"], e["target"], e["content"]) for e in merged["selected"]] == [
        ("replace", "Answer the question.", GOOD_RULE)
    ]
    assert merged["dropped_counts"]["over the learning rate"] == 1  # "Never guess." waits its turn
    assert (out / "best_skill.md").read_text(encoding="utf-8") == f"# Capitals\n\n{GOOD_RULE}\n"
