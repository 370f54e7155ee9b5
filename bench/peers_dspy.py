"""DSPy's side of bench/vs_peers.py that needs no DSPy: the candidates its search can pay for, and
the test scoring of a program's prompt.

bench/dspy_run.py (in DSPy's own venv) compiles the program and writes its prompt as DSPy's
ChatAdapter formats it (`program.json`: a system message with the signature and instructions, each
demo as a user turn and an assistant turn, the last user turn with a placeholder per input field).
Here each test item's fields fill the placeholders, the messages go to the served target as they
are (one call per item, temperature 0, the benchmark's output cap), the answer is read as DSPy's
adapter reads it (the text after `[[ ## answer ## ]]` up to the next field marker; a reply without
the marker is taken whole, as dspy_run.py's adapter does in the search) and scored by the
benchmark's own scorer: the same test items, target and scorer as every other system.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from openai import OpenAI

from skillgrad.benchmarks.contract import Benchmark
from skillgrad.values import AgentResult, Task

DSPY_SPEC = "dspy==3.4.1"
OUTPUT = "answer"
_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]")


def placeholder(name: str) -> str:
    """What stands for an input field in a stored prompt (filled per task by `fill`)."""
    return f"<<dspy input: {name}>>"


def input_fields(tasks: Sequence[Task]) -> list[str]:
    """The signature's inputs: `context, question` where a task has a context, else `question`."""
    return ["context", "question"] if any(t.context for t in tasks) else ["question"]


def task_inputs(task: Task, fields: Sequence[str]) -> dict[str, str]:
    values = {"context": task.context or "", "question": task.question}
    return {name: values[name] for name in fields}


def plan(budget: int, train: int, val: int) -> list[int]:
    """The BootstrapFewShotWithRandomSearch candidates (its seeds) that fit `budget` target calls,
    in its order: -3 zero-shot and -2 labelled demos (a validation each: `val` calls), then -1 and
    0, 1, ... bootstrapped (up to `train` teacher calls, then a validation). Never past the budget."""
    seeds, spent = [], 0
    for seed in range(-3, budget):
        cost = val if seed < -1 else train + val
        if spent + cost > budget:
            break
        seeds.append(seed)
        spent += cost
    return seeds


def fill(messages: Sequence[dict[str, Any]], inputs: dict[str, str]) -> list[dict[str, Any]]:
    """The prompt's messages with the placeholders of the last user turn filled by `inputs` (demos
    are never touched: a demo's text that looks like a placeholder stays as it is)."""
    out = [dict(m) for m in messages]
    last = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=None)
    if last is None:
        raise ValueError("the prompt has no user turn to put the task in")
    content = str(out[last]["content"])
    missing = [name for name in inputs if placeholder(name) not in content]
    if missing:
        raise ValueError(f"the prompt's last user turn has no placeholder for {', '.join(missing)}")
    for name, value in inputs.items():
        content = content.replace(placeholder(name), value)
    out[last]["content"] = content
    return out


def answer_of(reply: str, field: str = OUTPUT) -> str:
    """The reply's `field`, as DSPy's ChatAdapter reads it; the whole reply when it has no marker."""
    marks = list(_FIELD.finditer(reply))
    for i, mark in enumerate(marks):
        if mark.group(1) == field:
            end = marks[i + 1].start() if i + 1 < len(marks) else len(reply)
            return reply[mark.end() : end].strip()
    return reply.strip()


def score_prompt(
    program: dict[str, Any], tasks: Sequence[Task], bench: Benchmark, base_url: str, cap: int
) -> tuple[float, int]:
    """(mean score of `program`'s prompt over `tasks`, calls that failed); a failed call scores 0."""
    client = OpenAI(base_url=base_url, api_key="sk-bench", max_retries=1, timeout=1800)
    fields = list(program["fields"])
    total, errors = 0.0, 0
    for task in tasks:
        messages = fill(program["messages"], task_inputs(task, fields))
        try:
            reply = client.chat.completions.create(
                model="target",
                messages=messages,
                temperature=0.0,
                max_tokens=cap,  # type: ignore[arg-type]
            )
            answer = answer_of(reply.choices[0].message.content or "")
            result = AgentResult(answer=answer)
        except Exception as exc:  # the server refused or failed this call: the item scores 0
            errors += 1
            result = AgentResult(answer="", is_error=True, error=f"{type(exc).__name__}: {exc}")
        total += bench.score(task, result).value
    if errors == len(tasks):
        raise SystemExit(f"every one of {len(tasks)} test calls of DSPy's prompt failed")
    return total / len(tasks), errors
