"""What a chat target is sent (backends/chat_agent.chat_messages): a skill's worked examples as
earlier turns by default, in the system prompt with model.chat_examples=text, and never turns for a
section that skillgrad did not write."""

from __future__ import annotations

from skillgrad.backends.chat_agent import chat_messages, example_turn, task_prompt
from skillgrad.demos import EXAMPLES_CLOSE, EXAMPLES_OPEN, demo_from_task, with_demos
from skillgrad.package.model import SkillPackage, as_package
from skillgrad.templates import render
from skillgrad.values import Message, Task

RULE = "Reply with the option label alone.\n"
TRAIN = [
    Task("t1", "Which is first?\nOptions:\n(A) x\n(B) y", None, ("(A)",)),
    Task("t2", "Which is last?\nOptions:\n(A) x\n(B) y", "Some context.", ("(B)",)),
]
TASK = Task("q", "Which is middle?\nOptions:\n(A) x\n(B) y", None, ("(A)",))
SKILL = with_demos(RULE, [demo_from_task(t) for t in TRAIN])


def system(text: str) -> Message:
    return Message("system", render("skillgrad.backends", "chat_target_system", skill=text))


INSTRUCTION = "Reply with the answer only."  # chat_target_task.md's closing line
FIRST_ASKED = "Which is first?\nOptions:\n(A) x\n(B) y"  # TRAIN[0] as an example turn


def test_examples_arrive_as_turns_before_the_task_and_leave_the_system_prompt() -> None:
    sent = chat_messages(SKILL, TASK)
    assert sent == [
        system(RULE.strip()),
        Message("user", FIRST_ASKED),
        Message("assistant", "(A)"),
        Message("user", "Context:\nSome context.\n\nWhich is last?\nOptions:\n(A) x\n(B) y"),
        Message("assistant", "(B)"),
        Message("user", task_prompt(TASK)),
    ]
    # the closing instruction is said once, in the task's own turn; the examples keep it as written
    assert task_prompt(TASK).strip().endswith(INSTRUCTION)
    assert all(d.question.endswith(INSTRUCTION) for d in map(demo_from_task, TRAIN))
    assert [m.content.count(INSTRUCTION) for m in sent] == [0, 0, 0, 0, 0, 1]


def test_an_example_turn_drops_only_a_closing_instruction() -> None:
    assert example_turn(task_prompt(TRAIN[0]).strip()) == FIRST_ASKED
    said_inside = f"Say: {INSTRUCTION} Then stop."  # not at the end: not the template's closing line
    assert example_turn(said_inside) == said_inside
    assert example_turn("A task written by hand.") == "A task written by hand."


def test_text_keeps_the_examples_in_the_system_prompt() -> None:
    assert chat_messages(SKILL, TASK, "text") == [system(SKILL.strip()), Message("user", task_prompt(TASK))]


def test_a_skill_of_examples_alone_has_an_empty_system_skill() -> None:
    sent = chat_messages(with_demos("", [demo_from_task(TRAIN[0])]), TASK)
    assert sent[0] == system("(empty)") and [m.role for m in sent] == ["system", "user", "assistant", "user"]


def test_without_examples_both_modes_send_the_same() -> None:
    assert (
        chat_messages(RULE, TASK)
        == chat_messages(RULE, TASK, "text")
        == [
            system(RULE.strip()),
            Message("user", task_prompt(TASK)),
        ]
    )


def test_a_hand_written_examples_section_stays_text() -> None:
    own = f"{RULE}\n{EXAMPLES_OPEN}\nQ: which is first? A: (A)\n{EXAMPLES_CLOSE}\n"
    assert chat_messages(own, TASK) == [system(own.strip()), Message("user", task_prompt(TASK))]


def test_a_packages_examples_file_arrives_as_turns_without_its_pointer() -> None:
    pointer = render("skillgrad", "examples_pointer").strip()
    examples = with_demos("", [demo_from_task(TRAIN[0])])
    package = SkillPackage(
        {"SKILL.md": f"{RULE}\n{pointer}\n", "examples.md": examples, "references/notes.md": "Notes.\n"}
    ).encode()
    sent = chat_messages(package, TASK)
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1:3] == [Message("user", FIRST_ASKED), Message("assistant", "(A)")]
    assert "examples.md" not in sent[0].content and "<!-- example" not in sent[0].content
    assert "Notes." in sent[0].content and "Reply with the option label alone." in sent[0].content
    as_text = chat_messages(package, TASK, "text")[0].content
    assert pointer in as_text and "<!-- example" in as_text
    assert as_package(package) is not None  # the skill itself is unchanged
