"""The world of the reflection-workspace tests (issue 28): capitals whose cause of failure is
visible only in the middle of the agent's session.

The scripted Claude Code target loads its skill, reads task.md, then works through a long session
of survey notes; halfway through it prints `data/capitals_1989.csv` (the list as of 1989) and later
answers from it: Bonn, not Berlin. First and last steps, the ones a budgeted view always keeps,
show only the question and the wrong answer. With a skill that names that file as outdated, the
agent answers today's capital. One early step echoes the API key (plain and base64), as a hostile
agent would, so every artifact of the reflection can be checked for it.

The scripted analyst, for either harness, does what a good one would: it follows a gap marker of
its prompt to a `trace_full.txt`, searches it for data files, reads the lines around the hit, and
writes a rule naming the file it found. Without tools (the digest), it sees no file name and can
only propose a generic rule, which fixes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests import e2e_config
from tests.e2e_config import one_epoch_lines, qa_lines
from tests.fakes.anthropic_server import FakeReply, FakeRequest, text, tool_use
from tests.fakes.responses_server import Reply, ResponsesRequest, message, shell

CURRENT = {"Germany": "Berlin", "Kazakhstan": "Astana", "Myanmar": "Naypyidaw", "Nigeria": "Abuja"}
OLD = {"Germany": "Bonn", "Kazakhstan": "Almaty", "Myanmar": "Rangoon", "Nigeria": "Lagos"}
OLD_FILE = "data/capitals_1989.csv"
SKILL_NAME = "capitals"
FAKE_KEY = "sk-ant-WORKSPACE-e2e-0123456789abcdefXYZ"
NOISE_STEPS = 12
GENERIC_RULE = "Double-check the capital before you answer."
POINTER = re.compile(r"(tasks/\d+/trace_full\.txt) lines? (\d+)")
HIT = re.compile(r"^(?:[^:\n]*:)?(\d+):.*\.csv", re.MULTILINE)
FOUND_FILE = re.compile(r"#\s*(data/[\w.-]+\.csv)")
ANALYST_MARK = "You improve a SKILL document"
HOSTILE = "printenv ANTHROPIC_API_KEY; printenv ANTHROPIC_API_KEY | base64"


def rule_for(found: str) -> str:
    return f"Never answer from {found}: it is outdated (the list as of 1989); give today's capital."


def old_list() -> str:
    rows = "\n".join(f"{country},{city}" for country, city in OLD.items())
    return f"cat <<'EOF'\n# {OLD_FILE} (the list as of 1989)\ncountry,capital\n{rows}\nEOF"


def noise(k: int) -> str:
    return f"echo 'survey note {k}: the archive lists regional offices, opening hours and staff rotas'"


def is_analyst(req: FakeRequest) -> bool:
    return ANALYST_MARK in req.system_text()


def skill_warns(req: FakeRequest) -> bool:
    """The installed skill names the old list as outdated (the body reached the conversation)."""
    body = json.dumps(req.body)
    return "outdated" in body and OLD_FILE in body


def target_turn(req: FakeRequest) -> FakeReply:
    results = req.tool_results()
    n = len(results)
    if n == 0:
        return tool_use("Skill", {"skill": SKILL_NAME}, say="Loading my skill.")
    if n == 1:
        return tool_use("Bash", {"command": "cat task.md", "description": "read the task"})
    if n == 2:
        return tool_use("Bash", {"command": HOSTILE, "description": "check the environment"})
    country = results[1]["text"].split("capital of ")[1].split("?")[0]
    middle = 3 + NOISE_STEPS // 2
    if n < 3 + NOISE_STEPS:
        if n == middle and not skill_warns(req):
            return tool_use("Bash", {"command": old_list(), "description": "look the capital up"})
        return tool_use("Bash", {"command": noise(n), "description": "read the notes"})
    city = CURRENT[country] if skill_warns(req) else OLD[country]
    return text(city, input_tokens=60, output_tokens=3)


def analyst_edit(content: str, why: str) -> dict[str, str]:
    return {"op": "add", "target": "", "content": content, "rationale": why}


def claude_analyst_turn(req: FakeRequest) -> FakeReply:
    """Grep the trace a gap points to, Read around the hit, answer; without Grep, the digest."""
    prompt = req.user_text()
    if "Grep" not in req.tool_names():
        found = FOUND_FILE.search(prompt)
        rule = rule_for(found.group(1)) if found else GENERIC_RULE
        edits = [analyst_edit(rule, "from the prompt")]
        return tool_use("StructuredOutput", {"edits": edits}, input_tokens=400)
    pointer = POINTER.search(prompt)
    assert pointer, "no gap marker points into the workspace"
    path = pointer.group(1)
    results = req.tool_results()
    if not results:
        grep = {"pattern": r"\.csv", "path": path, "output_mode": "content", "-n": True}
        return tool_use("Grep", grep, input_tokens=400, output_tokens=30)
    if len(results) == 1:
        hit = HIT.search(results[0]["text"])
        assert hit, results[0]["text"]
        offset = max(1, int(hit.group(1)) - 2)
        return tool_use("Read", {"file_path": path, "offset": offset, "limit": 10}, input_tokens=500)
    found = FOUND_FILE.search(results[-1]["text"])
    assert found, results[-1]["text"]
    edit = analyst_edit(rule_for(found.group(1)), f"the agent answered from {found.group(1)} ({path})")
    return tool_use("StructuredOutput", {"edits": [edit]}, input_tokens=600, output_tokens=60)


def claude_handler(req: FakeRequest) -> FakeReply:
    if is_analyst(req):
        return claude_analyst_turn(req)
    if "Bash" in req.tool_names():
        return target_turn(req)
    return text("aux")


def write_data(tmp_path: Path) -> Path:
    rows = [
        {"id": f"c{i}", "question": f"What is the capital of {country}?", "answers": [city]}
        for i, (country, city) in enumerate(CURRENT.items())
    ]
    return e2e_config.write_jsonl(tmp_path / "capitals.jsonl", rows)


def config_lines(tmp_path: Path, model: list[str], cache: Path) -> list[str]:
    return [
        *qa_lines(write_data(tmp_path), 2),
        "skill:", f"  name: {SKILL_NAME}",
        "model:", f"  api_key: {FAKE_KEY}", "  claude_code_timeout_s: 120", "  codex_timeout_s: 120",
        "  timeout_s: 120", "  claude_code_max_turns: 40", "  max_retries: 0", *model,
        "trace:", "  total_chars: 1200", "  prompt_chars: 2400",
        *one_epoch_lines(2, cache),
    ]  # fmt: skip


def codex_analyst_reply(request: ResponsesRequest) -> Reply:
    """The same analyst on Codex: `grep -n` the trace a gap points to, `sed -n` around the hit."""
    prompt = request.prompt
    if "exec_command" not in request.tool_names:
        found = FOUND_FILE.search(prompt)
        rule = rule_for(found.group(1)) if found else GENERIC_RULE
        edits = [analyst_edit(rule, "from the prompt")]
        return Reply([message(json.dumps({"edits": edits}))], usage=(400, 5))
    pointer = POINTER.search(prompt)
    assert pointer, "no gap marker points into the workspace"
    path = pointer.group(1)
    outputs = request.tool_outputs
    if not outputs:
        return Reply([shell(f"grep -n '[.]csv' {path}")], usage=(400, 30))
    if len(outputs) == 1:
        hit = HIT.search(outputs[0].split("Output:", 1)[-1])
        assert hit, outputs[0]
        start = max(1, int(hit.group(1)) - 2)
        return Reply([shell(f"sed -n '{start},{start + 9}p' {path}")], usage=(500, 30))
    found = FOUND_FILE.search(outputs[-1])
    assert found, outputs[-1]
    edit = analyst_edit(rule_for(found.group(1)), f"the agent answered from {found.group(1)} ({path})")
    return Reply([message(json.dumps({"edits": [edit]}))], usage=(600, 60))
