"""`skillgrad train` against the scripted OpenAI server: worked examples and a form rule that land.

A BBH-style task set (option labels, exact match) whose scripted target answers "(B) 12/26/1951"
(the label and a date, as the small models do) unless its skill shows it two worked examples. The
analyst adds a form rule and two examples named by train task id; skillgrad writes the examples
from those tasks, the candidate passes the gate, and the best skill's examples name train tasks,
each written as the target sees the task, with its expected reply. With an analyst that proposes
nothing, the form fix (optimizer.form_fix, the default) makes the same kind of candidate itself."""

from __future__ import annotations

import json
from pathlib import Path

from skillgrad.backends.chat_agent import task_prompt
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.config import load_config
from skillgrad.demos import demo_from_task, parse_demos, with_demos
from skillgrad.values import Task
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import FAKE_KEY, history, is_optimizer, read_json, skillgrad

LABELS = "ABCD"
RULE = "Reply with the option label alone, in parentheses, e.g. (C)."


def items() -> list[dict[str, str]]:
    rows = []
    for i in range(20):
        day = 1 + i
        options = "\n".join(f"({x}) 0{k + 1}/{day:02d}/19{40 + i}" for k, x in enumerate(LABELS))
        question = f"Today is 0{i % 4 + 1}/{day:02d}/19{40 + i}. What is the date today?\nOptions:\n{options}"
        rows.append({"id": f"date-{i}", "input": question, "target": f"({LABELS[i % 4]})"})
    return rows


ROWS = items()
EXPECTED = {r["input"]: r["target"] for r in ROWS}


def examples_seen(request: Request) -> int:
    """Worked examples the target was shown: as earlier turns (model.chat_examples: turns, the
    default) or in its system prompt (text)."""
    turns = sum(1 for m in request.messages if m.get("role") == "assistant")
    return turns + request.system.count("<!-- example ")


def target_reply(request: Request) -> str:
    question = request.user.strip().removesuffix("Reply with the answer only.").strip()
    label = EXPECTED[question]
    return label if examples_seen(request) >= 2 else f"{label} 12/26/1951"


def example_ids(request: Request, op: str = "add_example") -> list[str]:
    """The task ids the reply schema lets the analyst name in an `op` edit (at the cap a skill's
    schema has no add_example, only replace_example)."""
    variants = request.response_format["json_schema"]["schema"]["properties"]["edits"]["items"]["anyOf"]
    variant = next(v for v in variants if v["properties"]["op"]["enum"] == [op])
    return variant["properties"]["task"]["enum"]


def wrong_label(request: Request) -> str:
    """A target that copies the examples' form but not their reasoning: every label it gives
    is the next one after the right label."""
    label = target_reply(request)[:3]
    return (
        f"({LABELS[(LABELS.index(label[1]) + 1) % 4]})"
        if examples_seen(request) >= 2
        else target_reply(request)
    )


SIZES = ["benchmark.train_size=6", "benchmark.val_size=6", "benchmark.test_size=4", "benchmark.seed=1"]


def write_rows(tmp_path: Path, rows: list[dict[str, str]] = ROWS) -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def train_tasks(tmp_path: Path, rows: list[dict[str, str]] = ROWS) -> list[Task]:
    """The train split `train` runs on (seed 1's of ROWS: (D) (B) (D) (B) (B) (A))."""
    config = load_config(None, ["benchmark.name=bbh", f"benchmark.data={write_rows(tmp_path, rows)}", *SIZES])
    return load_benchmark(config).load("train")


def train(
    tmp_path: Path,
    analyst,
    *overrides: str,
    estimate: bool = False,
    target=target_reply,
    rows: list[dict[str, str]] = ROWS,
) -> tuple[Path, list[Request]]:
    data = write_rows(tmp_path, rows)

    def handler(request: Request):
        if is_optimizer(request):
            return json_reply({"edits": analyst(request)})  # usage: ~4 characters a token
        return text(target(request))

    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        sets = [
            "benchmark.name=bbh",
            f"benchmark.data={data}",
            *SIZES,
            "model.backend=openai_chat",
            f"model.base_url={server.base_url}",
            f"model.api_key={FAKE_KEY}",
            "model.optimizer_model=fake-optimizer",
            "model.target_model=fake-target",
            "train.epochs=1",
            "train.batch_size=6",
            "train.minibatch_size=6",
            "train.concurrency=2",
            f"cache.dir={tmp_path / 'cache'}",
            *overrides,
        ]
        args = [a for s in sets for a in ("--set", s)]
        if estimate:
            projected = skillgrad("train", "--estimate", "--json", *args)
            assert projected.returncode == 0 and not server.requests, projected.stderr
            (tmp_path / "estimate.json").write_text(projected.stdout, encoding="utf-8")
        proc = skillgrad("train", "--out", str(out), *args)
        assert proc.returncode == 0, proc.stderr
        (tmp_path / "target_requests.json").write_text(
            json.dumps([r.messages for r in server.requests if not is_optimizer(r)]), encoding="utf-8"
        )
        return out, [r for r in server.requests if is_optimizer(r)]


def target_requests(tmp_path: Path) -> list[list[dict]]:
    return json.loads((tmp_path / "target_requests.json").read_text(encoding="utf-8"))


def split_ids(out: Path, folder: str) -> set[str]:
    return {p.parent.name for p in out.glob(f"{folder}/*/task.json")}


def assert_examples_of_train_tasks(out: Path, count: int) -> list[str]:
    skill = (out / "best_skill.md").read_text(encoding="utf-8")
    demos = parse_demos(skill)
    train, val = split_ids(out, "steps/0001/rollouts/train"), split_ids(out, "steps/0000/rollouts/val")
    assert len(demos) == count and len(train) == 6 and len(val) == 6
    assert {d.task_id for d in demos} <= train and not {d.task_id for d in demos} & (
        val | split_ids(out, "test/*")
    )
    by_id = {r["id"]: r for r in ROWS}
    for demo in demos:  # written from the task as the target sees it, the reply as the scorer wants it
        row = by_id[demo.task_id]
        assert demo.question == task_prompt(Task(row["id"], row["input"])).strip()
        assert demo.answer == row["target"] and demo.source == "expected"
    return [d.task_id for d in demos]


def test_the_analyst_adds_a_form_rule_and_two_examples_that_pass_the_gate(tmp_path: Path) -> None:
    def analyst(request: Request) -> list[dict]:
        first, second = example_ids(request)[:2]
        return [
            {"content": RULE, "op": "add", "target": "end", "rationale": "a date after the label"},
            {"op": "add_example", "task": first, "rationale": "show the label alone"},
            {"op": "add_example", "task": second, "rationale": "show the label alone"},
        ]

    out, asked = train(tmp_path, analyst, "optimizer.form_fix=none", "model.chat_examples=text")
    prompt = asked[0].user
    assert "## The form of the answers in this whole step (6 tasks)" in prompt
    assert "- 6 are an option label followed by more text, like '(" in prompt
    assert "Tasks you can name: " in prompt and all(f'"{i}" (task ' in prompt for i in example_ids(asked[0]))
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert [e["op"] for e in merged["selected"]] == ["add", "add_example", "add_example"]
    assert merged["form_fix"] == []
    gate = read_json(out / "steps" / "0001" / "gate.json")
    assert gate["accepted"] is True
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] == 0.0 and summary["best_val_score"] == 1.0
    assert summary["test"]["best"] == 1.0 > summary["test"]["baseline"]
    ids = assert_examples_of_train_tasks(out, 2)
    skill = (out / "best_skill.md").read_text(encoding="utf-8")
    assert skill.startswith(RULE + "\n\n<!-- examples -->")
    assert [e["op"] for e in history(out)[0]["edits"]] == ["add", "add_example", "add_example"]
    # model.chat_examples=text: the examples stay in the system prompt, no earlier turns
    best = [m for m in target_requests(tmp_path) if m[0]["content"].count("<!-- example ") == 2]
    assert best and all(len(m) == 2 for m in best)
    report = skillgrad("report", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert f"2 example(s), from train task(s) {', '.join(ids)}" in html
    assert "not among this run" not in html


def test_the_form_fix_proposes_the_rule_and_examples_when_the_analyst_proposes_nothing(
    tmp_path: Path,
) -> None:
    out, _ = train(tmp_path, lambda request: [], estimate=True)
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    fix = merged["form_fix"]
    ops = ["add"] + ["add_example"] * 4  # the rule and skill.max_examples (4) examples
    assert [e["op"] for e in fix] == ops
    assert fix[0]["content"].startswith("Reply with the label of the right option alone, in parentheses")
    assert all(e["rationale"].startswith("form fix: 6 of 6 answers of the step") for e in fix)
    assert [e["op"] for e in merged["selected"]] == ops
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is True
    ids = assert_examples_of_train_tasks(out, 4)
    labels = {r["id"]: r["target"] for r in ROWS}
    step_labels = {labels[i] for i in split_ids(out, "steps/0001/rollouts/train")}
    assert len({labels[i] for i in ids}) == len(step_labels)  # one per expected label before a second
    # the best skill's examples reach the target as turns before the task, out of its system prompt
    shown = [m for m in target_requests(tmp_path) if len(m) == 10]
    assert shown and all("<!-- example" not in m[0]["content"] for m in shown)
    by_id = {r["id"]: r for r in ROWS}
    assert [m["content"] for m in shown[0][1:9:2]] == [by_id[i]["input"] for i in ids]  # task alone
    assert shown[0][9]["content"].strip().endswith("Reply with the answer only.")  # said once, last
    assert [m["content"] for m in shown[0][2:9:2]] == [labels[i] for i in ids]
    # the estimate counts what the examples add to every later prompt
    projected = json.loads((tmp_path / "estimate.json").read_text(encoding="utf-8"))["total"]
    real = read_json(out / "summary.json")["usage"]["total"]
    assert 1 / 1.5 <= projected["total_tokens"] / (real["input_tokens"] + real["output_tokens"]) <= 1.5


def test_without_examples_the_form_fix_adds_the_rule_alone(tmp_path: Path) -> None:
    out, asked = train(tmp_path, lambda request: [], "skill.max_examples=0")
    assert "## Worked examples" not in asked[0].user  # nothing to offer
    assert "add_example" not in json.dumps(asked[0].response_format)
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert [e["op"] for e in merged["form_fix"]] == ["add"]
    # the rule alone does not fix this target's form: validated, and rejected by the gate
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is False


def test_a_val_tie_goes_to_the_candidate_whose_answers_hold_the_form(tmp_path: Path) -> None:
    """Every label wrong before and after the form fix: 0/6 against 0/6 on val. The tie goes to
    the candidate (optimizer.tie_break: form, the default), which becomes the best skill; with
    `none` the empty skill is kept."""
    (tmp_path / "form").mkdir()
    (tmp_path / "none").mkdir()
    out, _ = train(tmp_path / "form", lambda request: [], target=wrong_label)
    gate = read_json(out / "steps" / "0001" / "gate.json")
    assert gate["accepted"] is True and gate["candidate_score"] == gate["current_score"] == 0.0
    assert "the tie goes to the candidate" in gate["reason"] and "form on 6 of 6 val items" in gate["reason"]
    assert gate["test"] == "strict mean, tie broken by form"
    summary = read_json(out / "summary.json")
    assert summary["accepted"] == 1 and summary["best_version"] == "v0001"
    assert len(parse_demos((out / "best_skill.md").read_text(encoding="utf-8"))) == 4
    forms = read_json(out / "state.json")["val_forms"]
    assert sorted(sum(map(len, f.values())) for f in forms.values()) == [6, 6]
    kept, _ = train(tmp_path / "none", lambda request: [], "optimizer.tie_break=none", target=wrong_label)
    gate = read_json(kept / "steps" / "0001" / "gate.json")
    assert gate["accepted"] is False and gate["reason"] == "validation 0.0000 ties current 0.0000"
    assert (kept / "best_skill.md").read_text(encoding="utf-8") == ""


def copies_the_majority(request: Request) -> str:
    """A target that answers the label most of its worked examples show, where one label holds
    more than half of them (the 1.5B answered (B) to 30 of 32 disambiguation_qa tasks after
    examples (B) (B) (B) (A)), and the right label otherwise."""
    label = target_reply(request)[:3]
    shown = [m["content"].strip() for m in request.messages[1:-1] if m.get("role") == "assistant"]
    top = max(sorted(set(shown)), key=shown.count, default=None)
    return top if top is not None and 2 * shown.count(top) > len(shown) else label


def test_an_example_of_the_label_the_target_gives_wrongly_is_swapped_and_passes_the_gate(
    tmp_path: Path,
) -> None:
    """An initial skill whose four examples are (B) (B) (B) and one (D): the target answers (B) to
    every task, in form, so no rule is due. At the step whose answers give (B) wrongly twice, the
    form fix swaps the last (B) example for a task of the step of the label shown least, and the
    gate keeps the swap: no label holds the majority, and the target answers right."""
    tasks = train_tasks(tmp_path)
    b_tasks = [t for t in tasks if t.answers[0] == "(B)"]
    d_task = next(t for t in tasks if t.answers[0] == "(D)")
    assert len(b_tasks) == 3  # seed 1's train split: (D) (B) (D) (B) (B) (A)
    initial = tmp_path / "skill.md"
    initial.write_text(with_demos(RULE + "\n", [demo_from_task(t) for t in [*b_tasks, d_task]]), "utf-8")
    out, _ = train(
        tmp_path,
        lambda request: [],
        f"skill.init={initial}",
        "train.batch_size=3",
        "train.minibatch_size=3",
        target=copies_the_majority,
    )
    labels = {t.id: t.answers[0] for t in tasks}
    held = {t.id for t in [*b_tasks, d_task]}
    swaps = [
        (step, fix)
        for step in ("0001", "0002")
        for fix in read_json(out / "steps" / step / "merged_patch.json")["form_fix"]
    ]
    assert len(swaps) == 1
    step, swap = swaps[0]
    assert (swap["op"], swap["target"]) == ("replace_example", b_tasks[-1].id)
    assert swap["content"] in labels and swap["content"] not in held and labels[swap["content"]] != "(B)"
    assert swap["rationale"].startswith("form fix: the target answered (B) wrongly on ")
    assert read_json(out / "steps" / step / "gate.json")["accepted"] is True
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] == 2 / 6 and summary["best_val_score"] == 1.0
    demos = parse_demos((out / "best_skill.md").read_text(encoding="utf-8"))
    assert [d.task_id for d in demos] == [b_tasks[0].id, b_tasks[1].id, swap["content"], d_task.id]
