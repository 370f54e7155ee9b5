"""The form fix (loop/formfix.py): skillgrad's own rule and worked examples for a step whose
answers have the wrong form, and nothing where the form is not what fails them."""

from __future__ import annotations

from skillgrad.benchmarks.bbh import score_target
from skillgrad.benchmarks.scoring import score_numeric
from skillgrad.demos import demo_from_task, with_demos
from skillgrad.loop.example_edits import ExampleWriter
from skillgrad.loop.formfix import FORM_FIX_MINIBATCH, FORM_FIXES, examples_untried, pick_examples
from skillgrad.loop.patch_merge import MergedEdit
from skillgrad.loop.selection import select_valid
from skillgrad.package.doc import open_skill, skill_demos
from skillgrad.skilldoc import END_ANCHOR, Edit
from skillgrad.values import AgentResult, Rollout, Task

RULE = "Reply with the label of the right option alone, in parentheses, for example (C); no other words."


def date(i: int, label: str) -> Task:
    return Task(
        f"d{i}",
        f"What is the date {i} days ago?\nOptions:\n(A) 01/0{i}/1990\n(B) 02/0{i}/1990",
        None,
        (label,),
    )


TASKS = [date(i, label) for i, label in enumerate(["(A)", "(A)", "(B)", "(A)", "(C)", "(B)"])]


def exact(task: Task, answer: str) -> Rollout:
    return Rollout(task, AgentResult(answer=answer), score_target(answer, task.answers[0]))


def step(answers: list[str]) -> list[Rollout]:
    return [exact(t, a) for t, a in zip(TASKS, answers, strict=True)]


def test_a_step_of_label_and_date_answers_gets_the_rule_and_three_examples_of_distinct_labels() -> None:
    batch = step(["(F) 12/26/1951"] * 6)  # a label no task expects: no bias to pull against
    patch = FORM_FIXES["examples"].propose("", batch, 3)
    assert patch is not None and patch.minibatch == FORM_FIX_MINIBATCH and patch.failures == 6
    assert [(e.op, e.content) for e in patch.edits] == [
        ("add", RULE),
        ("add_example", "d0"),
        ("add_example", "d2"),
        ("add_example", "d4"),
    ]
    assert patch.edits[0].rationale == (
        "form fix: 6 of 6 answers of the step failed and were not an option label in parentheses, like (A)"
    )
    assert [e.op for e in FORM_FIXES["rule"].propose("", batch, 3).edits] == ["add"]  # type: ignore[union-attr]
    assert FORM_FIXES["none"].propose("", batch, 3) is None


def test_tasks_the_target_passed_come_first_and_only_the_room_left_is_filled() -> None:
    batch = step(["(B) 12/26/1951", "(A) x", "(B) y", "(A) z", "(C)", "(B) w"])
    assert pick_examples(batch, 2, set()) == ["d4", "d0"]  # d4 passed: its entry is the target's own reply
    held = with_demos(RULE + "\n", [demo_from_task(TASKS[0]), demo_from_task(TASKS[2])])
    patch = FORM_FIXES["examples"].propose(held, batch, 3)
    assert patch is not None and [(e.op, e.content) for e in patch.edits] == [("add_example", "d4")]
    full = with_demos(RULE + "\n", [demo_from_task(t) for t in TASKS[:3]])
    assert FORM_FIXES["examples"].propose(full, batch, 3) is None  # the rule is there, no room left


def test_the_examples_keep_the_expected_labels_balanced() -> None:
    tasks = [date(i, label) for i, label in enumerate(["(C)", "(C)", "(C)", "(B)", "(B)", "(B)"])]
    batch = [exact(t, "(A) 12/26/1951") for t in tasks]
    assert pick_examples(batch, 4, set()) == ["d0", "d3", "d1", "d4"]  # (C) (B) (C) (B)
    assert pick_examples(batch, 2, {"d0"}, ["(C)"]) == ["d3", "d1"]  # the held (C) counts
    assert pick_examples(batch, 3, set(), ["(B)", "(B)"]) == ["d0", "d1", "d2"]  # (C) x2, then a tie
    assert pick_examples(batch, 9, set()) == ["d0", "d3", "d1", "d4", "d2", "d5"]  # the room is a cap
    assert pick_examples(batch, 0, set()) == []


def test_the_examples_pull_against_the_answer_the_target_gives_wrongly() -> None:
    batch = step(["(B) 12/26/1951"] * 6)  # (B) is wrong on d0 d1 d3 d4: it counts as shown four times
    assert pick_examples(batch, 2, set()) == ["d0", "d4"]  # (A) (C): no (B) yet
    # three labels, three examples: one each, (B) last; six: two each, then what is left
    assert pick_examples(batch, 3, set()) == ["d0", "d4", "d2"]
    assert pick_examples(batch, 6, set()) == ["d0", "d4", "d1", "d2", "d5", "d3"]
    right = step(["(A) x", "(A) y", "(B) z", "(A) w", "(C) v", "(B) u"])  # labels right: nothing counts
    assert pick_examples(right, 3, set()) == ["d0", "d2", "d4"]
    ambiguous = [exact(date(i, label), "(C) Ambiguous") for i, label in enumerate(["(A)", "(B)", "(C)"])]
    assert pick_examples(ambiguous, 2, set()) == ["d0", "d1"]  # "(C) Ambiguous" gives (C)


def test_no_label_holds_more_than_an_even_share_of_the_examples() -> None:
    """The target's bias pulls the examples to the other labels, but never to a majority of one:
    after examples (B) (B) (B) (A) the 1.5B answered (B) to 30 of 32 disambiguation_qa tasks."""
    tasks = [date(i, label) for i, label in enumerate(["(B)", "(A)", "(B)", "(C)", "(B)", "(A)"])]
    biased = [exact(t, "(C) Ambiguous") for t in tasks]  # (C) wrong on five tasks, (A) never given
    assert pick_examples(biased, 4, set()) == ["d0", "d1", "d2", "d5"]  # (B) (A) (B) (A), not (B) x3
    assert pick_examples(biased, 2, {"d0", "d2"}, ["(B)", "(B)"]) == ["d1", "d5"]  # the held (B)s count
    only_b = [exact(t, "(C) Ambiguous") for t in (tasks[0], tasks[2], tasks[4])]
    assert pick_examples(only_b, 3, set()) == ["d0", "d2", "d4"]  # no other label left: the room is filled


def test_a_label_the_step_lacks_is_drawn_from_the_rest_of_train() -> None:
    tasks = [date(i, label) for i, label in enumerate(["(B)", "(B)", "(B)", "(A)", "(C)", "(A)"])]
    batch = [exact(t, "(C) Ambiguous") for t in tasks[:3]]  # the step: (B) x3, all answered (C)
    # (C) counts as shown three times: (B) then (A) of train, (B), (A), then (C): two of each at most
    assert pick_examples(batch, 5, set(), train=tasks) == ["d0", "d3", "d1", "d5", "d4"]
    # held ids are not drawn; with the held (A), three examples: one of each label
    assert pick_examples(batch, 2, {"d3"}, ["(A)"], train=tasks) == ["d0", "d4"]
    patch = FORM_FIXES["examples"].propose("", batch, 4, tasks)
    assert patch is not None and [e.content for e in patch.edits][1:] == ["d0", "d3", "d1", "d5"]


HELD = [date(10 + i, label) for i, label in enumerate(["(B)", "(B)", "(A)", "(B)"])]
BIASED = with_demos(RULE + "\n", [demo_from_task(t) for t in HELD])  # (B) x3 at the cap of 4


def test_at_the_cap_an_example_of_the_label_the_target_gives_wrongly_is_swapped() -> None:
    """(B) answered to every task, wrongly on d0 d1 d3 d4: the last (B) example gives way to a task
    of the label shown least, (C) (held 0 times, given wrongly 0 times)."""
    batch = step(["(B)"] * 6)
    patch = FORM_FIXES["examples"].propose(BIASED, batch, 4)
    assert patch is not None and patch.minibatch == FORM_FIX_MINIBATCH and patch.failures == 4
    [edit] = patch.edits
    assert (edit.op, edit.target, edit.content) == ("replace_example", "d13", "d4")
    assert edit.rationale == (
        "form fix: the target answered (B) wrongly on 4 of 6 tasks of the step, "
        "and 3 of the 4 examples show (B)"
    )
    train = [*TASKS, *HELD]
    writer = ExampleWriter(lambda split: train if split == "train" else [], batch, 2000)
    chosen = select_valid(
        [MergedEdit(edit, 1, 4)],
        BIASED,
        1,
        rejected=[],
        copied=lambda _e: False,
        write_example=writer,
        max_examples=4,
    )
    candidate, _ = open_skill(BIASED).apply([m.edit for m in chosen.selected])
    assert [(d.task_id, d.answer) for d in skill_demos(candidate.text)] == [
        ("d10", "(B)"),
        ("d11", "(B)"),
        ("d12", "(A)"),
        ("d4", "(C)"),
    ]
    assert FORM_FIXES["rule"].propose(BIASED, batch, 4) is None  # the rule alone never touches examples


def test_no_swap_with_room_left_a_scattered_miss_or_no_example_of_the_wrong_label() -> None:
    assert FORM_FIXES["examples"].propose(BIASED, step(["(B)"] * 6), 5) is None  # room: no swap
    scattered = step(["(B)", "(C)", "(B)", "(A)", "(C)", "(B)"])  # (B) and (C) wrong once each
    assert FORM_FIXES["examples"].propose(BIASED, scattered, 4) is None
    balanced = with_demos(RULE + "\n", [demo_from_task(t) for t in (HELD[2], TASKS[2], TASKS[5])])
    assert FORM_FIXES["examples"].propose(balanced, step(["(C)"] * 6), 3) is None  # no (C) example


def test_no_fix_where_answers_of_another_form_pass_or_already_have_the_form() -> None:
    assert FORM_FIXES["examples"].propose("", step(["(A)", "(B)", "(A)", "(A)", "(B)", "(B)"]), 3) is None
    assert FORM_FIXES["examples"].propose("", step(["(B) 1", "(A) 2", "(A)", "(B)", "(C)", "(C)"]), 3) is None
    numbers = [Task(f"g{i}", f"{i} + {i}?", None, (str(2 * i),)) for i in range(1, 7)]
    worked = [f"{i} and {i} make {2 * i}." if i < 5 else f"It is {i}." for i in range(1, 7)]
    batch = [
        Rollout(t, AgentResult(answer=a), score_numeric(a, t.answers))
        for t, a in zip(numbers, worked, strict=True)
    ]
    assert FORM_FIXES["examples"].propose("", batch, 3) is None  # the scorer reads the number out of any form
    spans = [Task(f"s{i}", "Who?", None, ("Ann Lee",)) for i in range(4)]
    wordy = [
        Rollout(t, AgentResult(answer="It was Ann Lee."), score_target("It was Ann Lee.", "Ann Lee"))
        for t in spans
    ]
    assert FORM_FIXES["examples"].propose("", wordy, 3) is None  # a span has no form to state
    assert FORM_FIXES["examples"].propose("", wordy, 3, idle=True) is not None  # first_examples'


def test_first_examples_go_to_an_idle_step_where_the_train_answers_share_no_form() -> None:
    # real expected answers: bbh dyck_languages (closing brackets), ruin_names seed 0's train
    # (option labels and two names)
    dyck = ["] ]", "] ] >", "}", ") >", ">", "] ) }"]
    ruin = ["(C)", "(D)", "(D)", "dearth, wind, & fire", "rita, sue and bob poo", "(B)"]
    for answers in (dyck, ruin):
        tasks = [Task(f"t{i}", f"Question {i}?", None, (a,)) for i, a in enumerate(answers)]
        batch = [
            Rollout(t, AgentResult(answer="no idea"), score_target("no idea", t.answers[0])) for t in tasks
        ]
        assert FORM_FIXES["examples"].propose("", batch, 4, tasks) is None  # a step that selected something
        patch = FORM_FIXES["examples"].propose("", batch, 4, tasks, idle=True)
        assert patch is not None and patch.failures == 6
        assert [e.op for e in patch.edits] == ["add_example"] * 4
        assert patch.edits[0].rationale == (
            "form fix: 6 of 6 tasks of the step failed, the train answers share no form a rule can "
            "state, and the skill shows no worked example"
        )
        assert FORM_FIXES["rule"].propose("", batch, 4, tasks, idle=True) is None
        held = with_demos("", [demo_from_task(tasks[0])])
        assert FORM_FIXES["examples"].propose(held, batch, 4, tasks, idle=True) is None  # it holds one
        assert FORM_FIXES["examples"].propose("", batch, 0, tasks, idle=True) is None  # examples off


def test_no_first_examples_where_the_train_answers_share_a_form_or_the_step_passed() -> None:
    in_form = step(["(B)", "(B)", "(A)", "(A)", "(A)", "(A)"])  # in form, two wrong: no form problem
    assert FORM_FIXES["examples"].propose("", in_form, 4, TASKS, idle=True) is None  # a rule exists
    tasks = [Task(f"t{i}", f"Close {i}", None, (a,)) for i, a in enumerate(["] ]", "}", ") >"])]
    passed = [
        Rollout(t, AgentResult(answer=t.answers[0]), score_target(t.answers[0], t.answers[0])) for t in tasks
    ]
    assert FORM_FIXES["examples"].propose("", passed, 4, tasks, idle=True) is None  # nothing failed


def test_examples_are_untried_once_the_gate_rejected_rules_and_never_an_example() -> None:
    rule = Edit("add", END_ANCHOR, "Close the brackets that are still open.", "why")
    example = Edit("add_example", "", "dyck-3", "why")
    assert examples_untried([rule])
    assert not examples_untried([])  # nothing rejected yet: the analysts' rules go first
    assert not examples_untried([rule, example])  # examples were judged, and rejected
