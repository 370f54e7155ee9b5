"""What reading the workspace costs per reflection: turns, tool calls, tokens and wall time of one
analyst call in `optimizer.reflection: workspace` beside `digest`, on the same minibatch, with the
REAL Claude Code CLI and the REAL Codex CLI as the analyst.

    python bench/reflection_overhead.py                      # both harnesses, 3 repetitions
    python bench/reflection_overhead.py --harness claude --reps 5

The world is the issue-28 test world (tests/reflection_world.py): two capitals tasks whose cause of
failure (the agent answered from an outdated list it printed mid-session) is hidden by the budgeted
view; the target is the real Claude Code CLI against the scripted Anthropic API on 127.0.0.1. Each
repetition trains one step per mode, each under its own cache salt: the same scripted sessions run
afresh (the same minibatch, with the same content), so the trainer has loaded the same SDKs when
its analyst is asked (a replayed rollout would leave the analyst's call to pay their import). The
digest analyst answers at once from its prompt (and proposes a generic rule, which is rejected);
the workspace analyst greps the trace a gap marker names, reads the lines around the hit and
proposes the rule that is accepted.

Tokens are what a real API would bill for the context: the scripted servers answer every request
with input tokens = the characters of its system prompt, messages (tool results included) and tool
definitions / 4, and output tokens = the characters of the reply / 4 (not the fakes' constants).
Turns, tool calls, tokens and wall time are read from each reflection's record
(`steps/0001/reflections/mb_00.json`, `session`); wall time is the analyst call alone, with
`train.overlap` off so that no rollout runs beside it; `build_s` is the time the trainer took to
write the workspace before the call (`workspace_build_s`; none for the digest).
Medians over the repetitions; the scripted APIs answer at once, so wall time is the CLI's own
overhead: its start, its tool runs, its turns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import e2e_config  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest  # noqa: E402
from tests.fakes.codex_cli import CODEX_CLI  # noqa: E402
from tests.fakes.responses_server import Reply, ResponsesRequest, ScriptedResponses  # noqa: E402
from tests.reflection_world import claude_handler, codex_analyst_reply, config_lines  # noqa: E402

FIELDS = ("turns", "tool_calls", "input_tokens", "output_tokens", "wall_s", "build_s")


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def anthropic_billed(req: FakeRequest) -> FakeReply:
    reply = claude_handler(req)
    context = _chars(req.body.get("system")) + _chars(req.messages) + _chars(req.body.get("tools"))
    reply.input_tokens = max(1, context // 4)
    reply.output_tokens = max(1, _chars(reply.content) // 4)
    return reply


def responses_billed(request: ResponsesRequest) -> Reply:
    reply = codex_analyst_reply(request)
    context = _chars(request.get("instructions")) + _chars(request.input_items) + _chars(request.get("tools"))
    tokens_in = max(1, context // 4)
    return Reply(reply.items, usage=(tokens_in, max(1, _chars(reply.items) // 4)))


def train(config: Path, out: Path, roles: list[str], mode: str, salt: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out), *roles]
    sets = [f"optimizer.reflection={mode}", f"cache.salt={salt}", "train.overlap=false"]
    cmd += [part for value in sets for part in ("--set", value)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    record = json.loads((out / "steps/0001/reflections/mb_00.json").read_text(encoding="utf-8"))
    session = record["session"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {
        "turns": session["turns"],
        "tool_calls": session["tool_calls"],
        "input_tokens": session["usage"]["input_tokens"],
        "output_tokens": session["usage"]["output_tokens"],
        "wall_s": session["wall_s"],
        "build_s": record.get("workspace_build_s", 0.0),
        "accepted": summary["accepted"],
        "record": record,
    }


def measure(harness: str, reps: int, root: Path) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {"workspace": [], "digest": []}
    with FakeAnthropic(anthropic_billed) as target, ScriptedResponses(responses_billed) as responses:
        model = [f"  target_base_url: {target.base_url}", "  target_model: claude-sonnet-4-5"]
        if harness == "claude":
            model += [f"  optimizer_base_url: {target.base_url}", "  optimizer_model: claude-sonnet-4-5"]
            roles = ["--backend", "claude_code_exec"]
        else:
            model += [f"  optimizer_base_url: {responses.base_url}", "  optimizer_model: gpt-5.5"]
            model += [f"  codex_cli_path: {CODEX_CLI}"]
            roles = ["--target-backend", "claude_code_exec", "--optimizer-backend", "codex_exec"]
        folder = root / harness
        folder.mkdir()
        config = e2e_config.write_config(folder, config_lines(folder, model, folder / "cache"))
        for rep in range(reps):
            for mode in ("workspace", "digest"):
                salt = f"rep {rep} {mode}"  # rollouts run live in both modes: each process is as warm
                results[mode].append(train(config, folder / f"{mode}-{rep}", roles, mode, salt))
    return results


def table(harness: str, results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A markdown table of the medians per mode, and their ratio."""
    head = f"| {harness} | mode | " + " | ".join(FIELDS) + " | accepted |"
    rows = [head, "|---|---|" + "---|" * (len(FIELDS) + 1)]
    medians = {m: {f: statistics.median(r[f] for r in runs) for f in FIELDS} for m, runs in results.items()}
    for mode, runs in results.items():
        cells = " | ".join(f"{medians[mode][f]:g}" for f in FIELDS)
        accepted = sum(r["accepted"] for r in runs)
        rows.append(f"| | {mode} | {cells} | {accepted}/{len(runs)} |")
    digest, workspace = medians["digest"], medians["workspace"]
    ratio = [f"{workspace[f] / digest[f]:.1f}x" if digest[f] else "-" for f in FIELDS]
    rows.append("| | workspace / digest | " + " | ".join(ratio) + " | |")
    return rows


def example(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    record = results["workspace"][0]["record"]
    lines = ["one workspace analyst's tool calls and the edit they led to:"]
    for call, found in zip(record["tool_calls"], record["opened"], strict=False):
        shown = {k: v for k, v in found.items() if k not in ("tool",)}
        lines.append(f"  {call['name']} {json.dumps(call['input'])} -> {json.dumps(shown)}")
    lines += [f"  edit: {json.dumps(e)}" for e in record["edits"]]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--harness", choices=("claude", "codex", "both"), default="both")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    harnesses = ["claude", "codex"] if args.harness == "both" else [args.harness]
    if "codex" in harnesses and not CODEX_CLI.is_file():
        raise SystemExit(f"no Codex CLI at {CODEX_CLI}: npm ci --prefix .ci/codex")
    with tempfile.TemporaryDirectory(prefix="skillgrad-overhead-") as tmp:
        for harness in harnesses:
            results = measure(harness, args.reps, Path(tmp))
            print("\n".join(table(harness, results)))
            print("\n".join(example(results)))
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
