"""Rewrite mode: a revised skill becomes line edits by diff, so the learning rate still applies."""

import pytest

from skillgrad.loop.analyst_prompt import AnalystInputs
from skillgrad.loop.rewrite import extract_skill, rewrite_messages
from skillgrad.skilldoc import PROTECT_CLOSE, PROTECT_OPEN, Edit, SkillDoc, diff_edits

OLD = "# Skill\n\nAnswer briefly.\nUse metric units.\nOld rule.\n"
NEW = (
    "# Skill\n\nAnswer with the value only.\nUse metric units.\nDates as YYYY-MM-DD.\n"
    "Names as SURNAME, First.\n"
)


def test_diff_pairs_changed_lines_as_replaces_and_chains_added_lines():
    edits = diff_edits(OLD, NEW)
    assert [(e.op, e.target, e.content) for e in edits] == [
        ("replace", "Answer briefly.", "Answer with the value only."),
        ("replace", "Old rule.", "Dates as YYYY-MM-DD."),
        ("add", "Dates as YYYY-MM-DD.", "Names as SURNAME, First."),
    ]
    doc, outcomes = SkillDoc(OLD).apply(edits)
    assert doc.text == NEW and all(o.status == "applied" for o in outcomes)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", "Rule one.\nRule two.\n"),
        ("A.\nB.\nC.\n", "A.\nC.\n"),
        ("A.\nB.\n", "New first.\nA.\nB.\n"),
        ("A.\nB.\nC.\nD.\n", "X.\nB.\nY.\nZ.\nW.\n"),
        ("A.\n\n\nB.\n", "A.\nB.\n"),
    ],
)
def test_applying_the_diff_reproduces_the_rewrite_line_for_line(old, new):
    doc, outcomes = SkillDoc(old).apply(diff_edits(old, new))
    assert all(o.status == "applied" for o in outcomes)
    assert sorted(line for line in doc.text.splitlines() if line) == sorted(
        line for line in new.splitlines() if line
    )


def test_identical_rewrite_is_no_edit_and_a_protected_change_cannot_apply():
    assert diff_edits(OLD, OLD.replace("\n\n", "\n")) == []
    old = f"Keep.\n{PROTECT_OPEN}\nSecret rule.\n{PROTECT_CLOSE}\n"
    edits = diff_edits(old, old.replace("Secret rule.", "Changed."))
    assert edits == [Edit("replace", "Secret rule.", "Changed.", "rewrite")]
    _, outcomes = SkillDoc(old).apply(edits)
    assert outcomes[0].status == "skipped" and "protected" in outcomes[0].reason


def test_extract_takes_the_last_complete_block():
    assert extract_skill("draft <skill>\nA\n</skill> final <skill>\nB\n</skill>") == ("B\n", False)
    assert extract_skill("```markdown\nRule.\n```") == ("Rule.\n", False)
    assert extract_skill("no skill here") is None and extract_skill("<skill>\nhalf a li") is None


def test_a_cut_reply_keeps_its_rules_up_to_the_echo_of_the_prompt():
    prompt = "## Tasks the agent did with this skill (2 failed, 0 passed)\n### Task 1: FAILED (score 0.00)\n"
    reply = (
        "<skill>\n# Rules\n1. Write dates as YYYY-MM-DD.\n2. Write names as SURNAME, First.\n\n"
        "### Task 1: FAILED (score 0.00)\nQuestion: When was the invoice iss"
    )
    assert extract_skill(reply, prompt) == (
        "# Rules\n1. Write dates as YYYY-MM-DD.\n2. Write names as SURNAME, First.\n\n",
        True,
    )
    assert extract_skill("<skill>\nRule one.\nRule tw", prompt) == ("Rule one.\n", True)  # the half line goes


def test_a_cut_rewrite_adds_and_replaces_but_never_deletes(tmp_path):
    from skillgrad.backends.interface import Reply
    from skillgrad.loop.rewrite import reflect_rewrite

    class Cut:
        name, model = "fake", "fake"

        def complete(self, messages, *, schema=None, effort=None, stage):
            assert schema is None and stage == "reflect"
            return Reply(text="<skill>\nKeep this.\nWrite dates as YYYY-MM-DD.\n## Tasks the agent did")

    inputs = AnalystInputs("Keep this.\nSecond line.\n", [], [], 3, False, None)  # type: ignore[arg-type]
    patch, _, _ = reflect_rewrite(Cut(), inputs, 0, None)  # type: ignore[arg-type]
    assert [(e.op, e.content) for e in patch.edits] == [("replace", "Write dates as YYYY-MM-DD.")]


def test_rewrite_prompt_shows_an_empty_skill_as_an_empty_block():
    user = rewrite_messages(AnalystInputs("", [], [], 3, False, None))[1].content  # type: ignore[arg-type]
    assert "<skill>\n\n</skill>" in user and "(the skill is empty)" not in user
    assert "changing at most 3 lines" in user
