"""`skillgrad train` against the scripted OpenAI server: the re-ask after every edit was dropped.

The analyst's first reply holds only edits that cannot change the skill (a line replaced by
itself, a rule the skill already states); the step would be lost. It is asked once more with the
skill shown as empty (an add-only schema), and that reply's new rule is selected, validated and
accepted; the rule the skill already states is dropped again. The extra call is counted as an
optimizer call."""

from __future__ import annotations

import re
from pathlib import Path

from skillgrad.demos import demo_from_task, with_demos
from tests import test_examples_e2e as examples_e2e
from tests.fakes.openai_server import Request, json_reply, text
from tests.test_analyst_e2e import SKILL, train
from tests.test_train_e2e import GOOD_RULE, history, is_optimizer, read_json, target_answer

EMPTY = "(the skill is empty)"
DROPPABLE = [
    {"content": "Answer the question.", "op": "replace", "target": "Answer the question.", "rationale": "r"},
    {"content": "answer the  question.", "op": "add", "target": "end", "rationale": "already there"},
]
AFRESH = [
    {"content": "Answer the question.", "op": "add", "target": "end", "rationale": "r"},
    {"content": GOOD_RULE, "op": "add", "target": "end", "rationale": "r"},
]


def handler(request: Request):
    if is_optimizer(request):
        return json_reply({"edits": AFRESH if EMPTY in request.user else DROPPABLE}, usage=(300, 40))
    return text(target_answer(request), 20, 8)


def test_reask_after_every_edit_was_dropped_selects_the_new_valid_edit(tmp_path: Path) -> None:
    out, analyst = train(tmp_path, handler)
    assert len(analyst) == 2 and EMPTY not in analyst[0].user and "Answer the question." in analyst[0].user
    # The re-ask shows the same tasks with the skill as empty: its schema offers add at the end only.
    assert "Answer the question." not in analyst[1].user.split("## Tasks")[0]
    item = analyst[1].response_format["json_schema"]["schema"]["properties"]["edits"]["items"]
    assert item["properties"]["op"]["enum"] == ["add"] and item["properties"]["target"]["enum"] == ["end", ""]
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["proposed"] == 4 and merged["reasked"] == 1
    assert [e["content"] for e in merged["selected"]] == [GOOD_RULE]
    assert merged["dropped_counts"]["cannot apply to the current skill"] == 2  # the restated line merges
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is True
    assert (out / "best_skill.md").read_text(encoding="utf-8") == f"{SKILL}\n{GOOD_RULE}\n"
    reflections = out / "steps" / "0001" / "reflections"
    assert sorted(p.name for p in reflections.iterdir()) == ["mb_00.json", "mb_00_reask.json"]
    record = read_json(reflections / "mb_00_reask.json")
    assert record["reask"] is True and [e["content"] for e in record["edits"]] == [
        e["content"] for e in AFRESH
    ]
    assert read_json(out / "summary.json")["usage"]["by_role"]["optimizer"]["calls"] == 2
    assert history(out)[0]["action"] == "accepted"


def test_reask_can_be_turned_off(tmp_path: Path) -> None:
    # form_fix=rule: a step without edits stays so (the form fix's first examples aside)
    out, analyst = train(tmp_path, handler, "optimizer.reask_dropped=false", "optimizer.form_fix=rule")
    assert len(analyst) == 1
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["selected"] == [] and merged["reasked"] == 0
    assert read_json(out / "summary.json")["usage"]["by_role"]["optimizer"]["calls"] == 1
    assert (out / "best_skill.md").read_text(encoding="utf-8") == SKILL


def test_a_reask_that_drops_everything_again_is_not_repeated(tmp_path: Path) -> None:
    def stubborn(request: Request):
        if is_optimizer(request):  # a restated line and one of the shown tasks' questions, both times
            question = re.search(r"What is the capital of [^?]+\?", request.user)
            assert question is not None
            copy = {"content": question.group(0), "op": "add", "target": "end", "rationale": "r"}
            return json_reply({"edits": [DROPPABLE[1], copy]})
        return text(target_answer(request), 20, 8)

    out, analyst = train(tmp_path, stubborn, "optimizer.form_fix=rule")  # no first examples
    assert len(analyst) == 2  # the first reply and one re-ask, no more
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["reasked"] == 1 and merged["selected"] == [] and merged["proposed"] == 4
    assert merged["dropped_counts"]["copies task text"] == 1
    # The step's selection ran twice (before and after the re-ask); its one copy is counted once.
    assert read_json(out / "summary.json")["task_text_copies"] == 1
    assert (out / "best_skill.md").read_text(encoding="utf-8") == SKILL


def test_rewrite_mode_reasks_from_the_empty_skill(tmp_path: Path) -> None:
    def rewriter(request: Request):
        if is_optimizer(request):
            if "<skill>\n\n</skill>" in request.user:  # the re-ask: the skill shown as empty
                return text(f"<skill>\n{GOOD_RULE}\n</skill>")
            return text(f"<skill>\n{SKILL}answer the  question.\n</skill>")  # restates a line: dropped
        return text(target_answer(request), 20, 8)

    out, analyst = train(tmp_path, rewriter, "optimizer.edit_mode=rewrite")
    assert len(analyst) == 2
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["reasked"] == 1 and [e["content"] for e in merged["selected"]] == [GOOD_RULE]
    assert GOOD_RULE in (out / "best_skill.md").read_text(encoding="utf-8")


def test_a_reask_shows_the_examples_the_skill_holds_and_its_example_edits_apply(tmp_path: Path) -> None:
    """A skill with a rule and four worked examples (skill.max_examples): the first reply only
    restates the rule. The re-ask shows the rules as empty and the examples section as it is, so
    the analyst reads that the skill holds four (before: "holds 0", and its add_example edits were
    all dropped past the cap: step 2 of 4 of the 26 BBH runs at 0c119bd/09a6d86); its swap and
    new rule apply."""
    held = examples_e2e.train_tasks(tmp_path)[:4]
    initial = tmp_path / "skill.md"
    initial.write_text(with_demos(examples_e2e.RULE + "\n", [demo_from_task(t) for t in held]), "utf-8")
    restated = {"content": examples_e2e.RULE, "op": "replace", "target": examples_e2e.RULE, "rationale": "r"}

    def analyst(request: Request) -> list[dict]:
        if examples_e2e.RULE in request.user.split("## Tasks")[0]:
            return [restated]
        swap_in = examples_e2e.example_ids(request, "replace_example")[0]
        return [
            {"content": GOOD_RULE, "op": "add", "target": "end", "rationale": "r"},
            {"op": "replace_example", "target": held[0].id, "task": swap_in, "rationale": "r"},
        ]

    out, asked = examples_e2e.train(
        tmp_path, analyst, f"skill.init={initial}", "optimizer.form_fix=none", target=examples_e2e.wrong_label
    )
    assert len(asked) == 2
    shown = asked[1].user.split("## Tasks")[0]
    assert "<!-- examples -->" in shown and examples_e2e.RULE not in shown and EMPTY not in shown
    assert "No line of the skill can be edited" in shown
    assert "## Worked examples (the skill holds 4, at most 4)" in asked[1].user
    assert "Examples in the skill: " + ", ".join(f'"{t.id}"' for t in held) in asked[1].user
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert merged["reasked"] == 1 and merged["dropped_counts"]["cannot apply to the current skill"] == 1
    assert [(e["op"], e["target"]) for e in merged["selected"]] == [
        ("add", "end"),
        ("replace_example", held[0].id),
    ]
