"""Activation's parts on their own: the front matter as text and its limits, trigger sets and their
splits, which skills a trace loaded (also in a real Codex rollout), trigger F1 and its gate, the
analyst's reply schema, the distractors, and the router's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from skillgrad.activation.agents import RoutingAgent, activation_agent
from skillgrad.activation.analyst import DescriptionAnalyst, description_schema
from skillgrad.activation.description import (
    check_description,
    description_edit,
    description_line,
    description_of,
    own_description,
    with_front_matter,
    without_tags,
)
from skillgrad.activation.detect import loaded_skills
from skillgrad.activation.distractors import load_distractors
from skillgrad.activation.metrics import TriggerF1, TriggerGate, confusion
from skillgrad.activation.triggers import (
    TriggerBenchmark,
    read_triggers,
    should_trigger,
    split_triggers,
    trigger_pool,
    trigger_task,
)
from skillgrad.backends.chat_agent import ChatAgent
from skillgrad.backends.workspace import SKILL_DESCRIPTION
from skillgrad.config import config_from_data
from skillgrad.errors import UserError
from skillgrad.loop.analyst_prompt import AnalystInputs
from skillgrad.loop.decision.gate import PairedGate
from skillgrad.package.model import SkillPackage, as_package
from skillgrad.session.build import checked_activation
from skillgrad.skilldoc import SkillDoc
from skillgrad.traces.codex_rollout import rollout_steps
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import AgentResult, Message, Reply, Rollout, Score, Task, TraceStep
from tests import e2e_config

REAL_ROLLOUT = (
    Path(__file__).resolve().parents[2]
    / "shared/reference/codex/real/codemie_rollout-2026-05-11T11-26-55.codex.jsonl"
)


def cfg(**sections: dict) -> object:
    return config_from_data(sections, "test")


# -- the front matter ----------------------------------------------------------------------------


def test_a_skill_without_front_matter_gets_the_installed_description_on_one_line() -> None:
    text = with_front_matter("Be terse.\n", "caps")
    assert text == f'---\nname: caps\ndescription: "{SKILL_DESCRIPTION}"\n---\n\nBe terse.\n'
    assert description_of("Be terse.\n") == SKILL_DESCRIPTION and own_description("Be terse.\n") is None


def test_a_folded_description_is_put_on_one_line_and_other_keys_kept() -> None:
    skill = "---\nname: caps\ndescription: >\n  Answer about\n  capitals.\nlicense: MIT\n---\n\nBe terse.\n"
    assert description_line(skill) is None
    text = with_front_matter(skill, "caps")
    assert text == '---\nname: caps\ndescription: "Answer about capitals."\nlicense: MIT\n---\n\nBe terse.\n'
    assert with_front_matter(text, "caps") == text  # already one line: untouched
    plain = "---\ndescription: Answer capitals.\n---\nBody\n"
    assert with_front_matter(plain, "caps") == plain


def test_a_description_step_is_one_replace_edit_of_its_line() -> None:
    skill = "---\nname: caps\ndescription: Old words.\n---\n\ndescription: Old words. stays in the body\n"
    edit = description_edit(skill, 'New "quoted" words: with a colon', "why")
    assert edit is not None and edit.op == "replace" and edit.target == "description: Old words."
    new, outcomes = SkillDoc(skill).apply([edit])
    assert outcomes[0].status == "applied"
    assert own_description(new.text) == 'New "quoted" words: with a colon'
    assert new.text.endswith("description: Old words. stays in the body\n")  # the body is not touched


def test_a_package_keeps_its_files() -> None:
    package = SkillPackage({"SKILL.md": "Body\n", "references/a.md": "A\n"}).encode()
    text = with_front_matter(package, "caps")
    decoded = as_package(text)
    assert decoded is not None and decoded.files["references/a.md"] == "A\n"
    assert own_description(text) == SKILL_DESCRIPTION and description_line(text) is not None


def test_an_over_long_initial_description_names_the_key() -> None:
    config = cfg(skill={"description_chars": 50})
    check_description(config, "s.md", f"---\ndescription: {'x' * 50}\n---\n")
    with pytest.raises(
        UserError, match=r"s\.md: .* 51 characters, over the limit of 50 \(skill\.description_chars"
    ):
        check_description(config, "s.md", f"---\ndescription: {'x' * 51}\n---\n")
    with pytest.raises(Exception, match="description_chars"):
        cfg(skill={"description_chars": 1025})  # Agent Skills allow 1024 at most


# -- trigger sets ---------------------------------------------------------------------------------


def rows(positives: int, negatives: int) -> list[dict]:
    out = [{"query": f"capital of country {i}?", "should_trigger": True} for i in range(positives)]
    return out + [{"query": f"unrelated request {i}", "should_trigger": False} for i in range(negatives)]


def test_trigger_splits_are_stratified_disjoint_and_seeded(tmp_path: Path) -> None:
    path = e2e_config.write_jsonl(tmp_path / "t.jsonl", rows(12, 8))
    config = cfg(benchmark={"triggers": str(path), "seed": 3})
    splits = split_triggers(trigger_pool(config, None), config)
    ids = [t.id for split in splits.values() for t in split]
    assert len(ids) == len(set(ids)) == 20
    for split in ("train", "val", "test"):
        labels = [should_trigger(t) for t in splits[split]]
        assert any(labels) and not all(labels), split
    assert [len(splits[s]) for s in ("train", "val", "test")] == [10, 5, 5]
    again = split_triggers(trigger_pool(config, None), config)
    assert [t.id for t in again["val"]] == [t.id for t in splits["val"]]
    other = cfg(benchmark={"triggers": str(path), "seed": 4})
    assert [t.id for t in split_triggers(trigger_pool(other, None), other)["val"]] != [
        t.id for t in splits["val"]
    ]


def test_positives_come_from_the_tasks_and_negatives_from_a_file(tmp_path: Path) -> None:
    data = e2e_config.write_jsonl(
        tmp_path / "qa.jsonl",
        [{"id": f"q{i}", "question": f"Capital of {i}?", "answers": ["x"]} for i in range(8)],
    )
    negatives = e2e_config.write_jsonl(
        tmp_path / "neg.jsonl", [{"question": f"Other task {i}"} for i in range(6)]
    )
    benchmark_cfg = {"name": "qa", "data": str(data), "train_size": 4, "val_size": 2, "test_size": 2}
    config = cfg(
        benchmark={**benchmark_cfg, "trigger_negatives": str(negatives)}, optimizer={"target": "both"}
    )
    from skillgrad.benchmarks.catalog import load_benchmark

    pool = trigger_pool(config, load_benchmark(config))
    assert sum(map(should_trigger, pool)) == 8 and len(pool) == 14
    assert {t.question for t in pool if should_trigger(t)} == {f"Capital of {i}?" for i in range(8)}
    no_negatives = cfg(benchmark=benchmark_cfg, optimizer={"target": "description"})
    with pytest.raises(UserError, match="benchmark.trigger_negatives"):
        trigger_pool(no_negatives, load_benchmark(no_negatives))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"query": "q", "should_trigger": "yes"},
            r"t\.jsonl:1: field 'should_trigger' must be true or false",
        ),
        ({"should_trigger": True}, r"t\.jsonl:1: field 'query' must be a non-empty string"),
    ],
)
def test_a_bad_trigger_row_is_a_one_line_error(tmp_path: Path, row: dict, message: str) -> None:
    path = e2e_config.write_jsonl(tmp_path / "t.jsonl", [row])
    with pytest.raises(UserError, match=message):
        read_triggers(path)


def test_a_query_with_both_labels_or_too_few_queries_is_refused(tmp_path: Path) -> None:
    both = e2e_config.write_jsonl(
        tmp_path / "b.jsonl", [*rows(3, 3), {"query": "Capital of country 0?", "should_trigger": False}]
    )
    config = cfg(benchmark={"triggers": str(both)})
    with pytest.raises(
        UserError, match="listed both as one that should load the skill and as one that should not"
    ):
        trigger_pool(config, None)
    few = e2e_config.write_jsonl(tmp_path / "f.jsonl", rows(3, 0))
    config = cfg(benchmark={"triggers": str(few)})
    with pytest.raises(UserError, match="3 queries that should load the skill and 0 that should not"):
        split_triggers(trigger_pool(config, None), config)


# -- which skills a session loaded ----------------------------------------------------------------


def call(tool: str, text: str) -> TraceStep:
    return TraceStep("tool_call", text, tool=tool)


def test_loaded_skills_from_claude_code_and_codex_steps() -> None:
    names = ["capitals", "pdf-forms", "my-capitals"]
    assert loaded_skills([call("Skill", "capitals")], names) == ["capitals"]
    assert loaded_skills([call("Skill", "plugin:capitals args=x")], names) == ["capitals"]
    assert loaded_skills([call("Read", "/w/.claude/skills/pdf-forms/SKILL.md")], names) == ["pdf-forms"]
    cat = call(
        "exec_command",
        "cat .agents/skills/capitals/SKILL.md && sed -n 1,5p .agents/skills/pdf-forms/SKILL.md",
    )
    assert loaded_skills([cat], names) == ["capitals", "pdf-forms"]
    assert loaded_skills([call("exec_command", "cat .agents/skills/my-capitals/SKILL.md")], names) == [
        "my-capitals"
    ]
    # the skill's name in text or results is no load; nor is listing the folder
    quiet = [TraceStep("text", "I could use capitals/SKILL.md"), call("Bash", "ls .claude/skills/capitals")]
    assert loaded_skills([*quiet, TraceStep("tool_result", "capitals/SKILL.md", tool="Bash")], names) == []


@pytest.mark.skipif(not REAL_ROLLOUT.is_file(), reason="real Codex rollout not present (../shared)")
def test_loaded_skills_in_a_real_codex_rollout() -> None:
    records = [
        json.loads(line) for line in REAL_ROLLOUT.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    steps = rollout_steps(records).steps
    listed = ["using-superpowers", "brainstorming", "test-driven-development", "imagegen", "openai-docs"]
    loaded = loaded_skills(steps, listed)
    assert loaded[:2] == ["using-superpowers", "brainstorming"] and "test-driven-development" in loaded
    assert "imagegen" not in loaded and "openai-docs" not in loaded  # listed, never read


def test_a_trigger_run_scores_one_when_loaded_exactly_when_it_should() -> None:
    bench = TriggerBenchmark({}, "capitals", ["capitals", "pdf-forms"], harness=True)
    yes, no = trigger_task("p", "capital?", True), trigger_task("n", "merge pdfs", False)
    loaded = AgentResult("Paris", trace=[call("Skill", "capitals")])
    other = AgentResult("done", trace=[call("Skill", "pdf-forms")])
    assert bench.score(yes, loaded).value == 1.0 and bench.score(no, other).value == 1.0
    missed = bench.score(yes, other)
    assert missed.value == 0.0 and "did not" in missed.feedback and "pdf-forms" in missed.feedback
    assert bench.score(no, loaded).feedback.startswith("should not have loaded the skill but did")
    router = TriggerBenchmark({}, "capitals", ["capitals", "pdf-forms"], harness=False)
    assert (
        router.score(yes, AgentResult("capitals")).passed
        and not router.score(yes, AgentResult("none")).passed
    )


# -- trigger F1 and the gate ----------------------------------------------------------------------


def test_confusion_weighs_each_query_once_by_its_trigger_rate() -> None:
    labels = {"p1": True, "p2": True, "n1": False}
    counts = confusion({"p1": [1, 1, 0, 0], "p2": [1.0], "n1": [0.0, 1.0]}, labels)  # n1 loaded half the time
    assert (counts.tp, counts.fn, counts.fp, counts.tn) == (1.5, 0.5, 0.5, 0.5)
    assert counts.f1 == pytest.approx(2 * 1.5 / (3 + 0.5 + 0.5))


def test_the_trigger_gate_needs_f1_to_rise_and_the_paired_test() -> None:
    labels = {f"p{i}": True for i in range(4)} | {f"n{i}": False for i in range(4)}
    gate = TriggerGate(PairedGate(0.05), TriggerF1(labels))
    incumbent = {
        **{f"p{i}": [0.0, 0.0, 0.0] for i in range(4)},
        **{f"n{i}": [1.0, 1.0, 1.0] for i in range(4)},
    }
    fixed = {**incumbent, **{f"p{i}": [1.0, 1.0, 1.0] for i in range(4)}}
    decision = gate.decide(fixed, incumbent)
    assert (
        decision.accepted
        and decision.effect == 1.0
        and "trigger F1 1.0000 > current 0.0000" in decision.reason
    )
    # more items right but F1 no higher: a negative fixed while F1 stays 0 (no positive found)
    wrong = {**incumbent, "n0": [0.0, 0.0, 0.0]}
    assert not gate.decide(incumbent, wrong).accepted
    # racing's bound: full marks on what has not run could still pass; a lost cause cannot
    assert gate.can_pass({"p0": [1.0]}, incumbent)
    assert not gate.can_pass({f"p{i}": [0.0, 0.0, 0.0] for i in range(4)}, incumbent)


# -- the analyst ----------------------------------------------------------------------------------


class ScriptedChat:
    name, model = "scripted", "m"

    def __init__(self, data: dict) -> None:
        self.data = data
        self.seen: list[tuple[list[Message], dict | None]] = []

    def complete(self, messages: list[Message], *, schema=None, effort=None, stage: str) -> Reply:
        self.seen.append((messages, schema))
        return Reply(json.dumps(self.data), data=self.data)


def test_the_analyst_schema_bounds_the_description() -> None:
    schema = description_schema(60)
    jsonschema.validate(
        {"rationale": "r", "description": "Answers capital-city questions for countries."}, schema
    )
    for bad in ("x" * 61, "short"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"rationale": "r", "description": bad}, schema)
    # Agent Skills allow no XML tags: a reply's tags are taken out before the edit
    assert without_tags("Use <b>always</b> for a < b capitals.") == "Use  always  for a  b capitals."


def test_the_analyst_sees_the_failures_and_the_other_skills(tmp_path: Path) -> None:
    distractors = load_distractors(cfg(skill={"name": "capitals"}))
    analyst = DescriptionAnalyst("capitals", distractors, 200)
    skill = with_front_matter("Body\n", "capitals")
    missed = Rollout(
        trigger_task("p", "What is the capital of Peru?", True),
        AgentResult("x"),
        Score(0, False, "did not load it"),
    )
    wrong = Rollout(
        trigger_task("n", "Merge two PDFs", False), AgentResult("x"), Score(0, False, "loaded it")
    )
    inputs = AnalystInputs(skill, [missed, wrong], [], 4, False, TraceCaps(200, 500, 4000))
    chat = ScriptedChat({"rationale": "capitals", "description": "Answers questions about capital cities."})
    patch, _, _ = analyst(chat, inputs, 0, None)  # type: ignore[arg-type]
    messages, schema = chat.seen[0]
    prompt = messages[1].content
    assert "What is the capital of Peru?" in prompt.split("but did not (1)")[1].split("##")[0]
    assert (
        "Merge two PDFs" in prompt.split("should not have (1)")[1]
        and "- pdf-forms: Fill in PDF forms" in prompt
    )
    assert schema is not None and schema["properties"]["description"]["maxLength"] == 200
    assert (
        len(patch.edits) == 1
        and patch.edits[0].content == 'description: "Answers questions about capital cities."'
    )


# -- distractors and agents -----------------------------------------------------------------------


def test_the_shipped_distractors_and_a_folder_of_yours(tmp_path: Path) -> None:
    shipped = load_distractors(cfg())
    assert [d.name for d in shipped] == [
        "code-review",
        "data-analysis",
        "git-workflow",
        "pdf-forms",
        "web-research",
    ]
    assert all(20 < len(d.description) <= 1024 for d in shipped)
    (tmp_path / "mine" / "notes").mkdir(parents=True)
    (tmp_path / "mine" / "notes" / "SKILL.md").write_text(
        "---\nname: notes\ndescription: Take notes.\n---\nBody\n"
    )
    assert [
        d.name for d in load_distractors(cfg(benchmark={"distractor_skills": str(tmp_path / "mine")}))
    ] == ["notes"]
    with pytest.raises(UserError, match="has the name of the skill under training"):
        load_distractors(
            cfg(benchmark={"distractor_skills": str(tmp_path / "mine")}, skill={"name": "notes"})
        )
    (tmp_path / "mine" / "bare").mkdir()
    (tmp_path / "mine" / "bare" / "SKILL.md").write_text("No front matter\n")
    with pytest.raises(UserError, match=r"bare/SKILL\.md: no description"):
        load_distractors(cfg(benchmark={"distractor_skills": str(tmp_path / "mine")}))


def test_trigger_and_distractor_paths_are_checked_naming_their_key(tmp_path: Path) -> None:
    body = {"optimizer": {"target": "description"}}
    with pytest.raises(UserError, match=r"^benchmark\.triggers .*nope\.jsonl: no such file"):
        checked_activation(cfg(benchmark={"triggers": str(tmp_path / "nope.jsonl")}, **body), None)
    with pytest.raises(UserError, match=r"^benchmark\.trigger_negatives .*: is a folder; pass a file"):
        checked_activation(cfg(benchmark={"trigger_negatives": str(tmp_path)}, **body), None)
    (tmp_path / "skills.txt").write_text("not a folder")
    with pytest.raises(
        UserError, match=r"^benchmark\.distractor_skills .*skills\.txt: is a file; pass a folder"
    ):
        config = cfg(
            benchmark={
                "triggers": str(tmp_path / "skills.txt"),
                "distractor_skills": str(tmp_path / "skills.txt"),
            },
            **body,
        )
        checked_activation(config, None)
    assert checked_activation(cfg(benchmark={"triggers": str(tmp_path / "nope.jsonl")}), None) is None  # body


def test_the_router_lists_every_skill_and_picks_one_or_none() -> None:
    config = cfg(skill={"name": "capitals"})
    chat = ScriptedChat({"skill": "capitals"})
    agent = activation_agent(config, ChatAgent(chat), load_distractors(config))  # type: ignore[arg-type]
    assert isinstance(agent, RoutingAgent)
    skill = with_front_matter("Answer with the city.\n", "capitals")
    result = agent.run(trigger_task("p", "What is the capital of Peru?", True), skill, Path("."))
    messages, schema = chat.seen[0]
    assert result.answer == "capitals" and not result.is_error
    assert (
        "- capitals: " + SKILL_DESCRIPTION in messages[0].content
        and "- git-workflow: " in messages[0].content
    )
    assert schema is not None and schema["properties"]["skill"]["enum"][-1] == "none"
    # a task (not a query): routed, then answered with the picked skill as the system prompt
    task = Task("q", "What is the capital of Peru?", answers=("Lima",))
    chat.data = {"skill": "capitals"}
    answered = agent.run(task, skill, Path("."))
    assert answered.trace[0].text == "routed the request to: capitals"
    assert "Answer with the city." in chat.seen[-1][0][0].content
