"""Wall time and peak memory of reading a large Claude Code session into its budgeted view.

Two large sessions, each `--repeat` times (default 50) the real session files in
../shared/reference/claude-code/real: every file concatenated (hundreds of appended runs, of which
the view shows the last), and the largest transcript repeated as one run (every step is kept). Each
figure comes from a fresh child process (peak RSS is per process): the import alone, skillgrad's
streaming parse plus the view, and, side by side, the naive read that `json.loads` every line of the
file into a list, which is what a non-streaming parser holds at its peak before it makes a step.

    python bench/trace_parse.py --real ../shared/reference/claude-code/real
    python bench/trace_parse.py --real ../shared/reference/claude-code/real --write-docs docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

IMPORTS = "import json, resource, sys, time\nfrom skillgrad.traces.claude import load_session\n"
PROBES = {
    "import only": "",
    "skillgrad parse + view": (
        "from skillgrad.traces.view import render_view\n"
        "t = time.perf_counter(); s = load_session(sys.argv[1]); v = render_view(s.steps)\n"
        "out = {'wall_s': time.perf_counter() - t, 'steps': len(s.steps), 'runs': s.runs,\n"
        "       'kept_chars': sum(len(x.text) for x in s.steps), 'view_chars': len(v)}\n"
    ),
    "naive json.loads of every line": (
        "t = time.perf_counter(); rows = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]\n"
        "out = {'wall_s': time.perf_counter() - t, 'records': len(rows)}\n"
    ),
}
REPORT = "out = locals().get('out', {}); out['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\nprint(json.dumps(out))\n"  # noqa: E501
MARK = "<!-- bench/trace_parse.py -->"
END = "<!-- /bench/trace_parse.py -->"


def _covered(view: str) -> tuple[set[int], int]:
    """Step numbers a view shows (single, pair and collapse lines) and the errors those lines count."""
    shown: set[int] = set()
    errors = 0
    for line in view.splitlines():
        collapsed = re.match(r"steps ([\d, -]+): (\d+)x ", line)
        single = re.match(r"(\d+)(?:-(\d+))?\. \[", line)
        if collapsed:
            for part in collapsed.group(1).split(", "):
                a, _, b = part.partition("-")
                shown.update(range(int(a), int(b or a) + 1))
            errors += int(collapsed.group(2))
        elif single:
            a, b = int(single.group(1)), int(single.group(2) or single.group(1))
            shown.update(range(a, b + 1))
            errors += " ERROR" in line
    return shown, errors


def per_file_table(real: Path, budget: int) -> str:
    from skillgrad.traces.claude import load_session
    from skillgrad.traces.steps import TraceCaps
    from skillgrad.traces.view import render_view

    lines = [
        f"Per real file, the default view ({budget} characters):",
        "",
        "| file | steps shown / total | errors shown or counted / total | view chars | status |",
        "| --- | --- | --- | --- | --- |",
    ]
    for path in sorted(real.glob("*.jsonl")):
        session = load_session(path)
        view = render_view(session.steps, TraceCaps(total_chars=budget))
        shown, errors = _covered(view)
        total_errors = sum(1 for st in session.steps if st.is_error and st.kind != "tool_call")
        status = "finished" if session.finished else "unfinished"
        status += ", failed" if session.finished and session.is_error else ""
        lines.append(
            f"| {path.name} | {len(shown)} / {len(session.steps)} | {errors} / {total_errors} "
            f"| {len(view)} | {status} |"
        )
    return "\n".join(lines)


def build_session(files: list[Path], repeat: int, target: Path) -> int:
    with target.open("wb") as out:
        for _ in range(repeat):
            for path in files:
                data = path.read_bytes()
                out.write(data if data.endswith(b"\n") else data + b"\n")
    return target.stat().st_size


def probe(code: str, session: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS + code + REPORT, str(session)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def table(title: str, size: int, figures: dict[str, dict[str, float]]) -> str:
    base = figures["import only"]["peak_rss_mb"]
    ours = figures["skillgrad parse + view"]
    lines = [
        f"{title}: {size / 2**20:.1f} MiB, {int(ours['runs'])} run(s); the view is built from the last "
        f"run's {int(ours['steps'])} steps ({ours['kept_chars'] / 2**20:.1f} MiB of step text kept).",
        "",
        "| what | wall s | peak RSS MiB | RSS above the import MiB |",
        "| --- | --- | --- | --- |",
    ]
    for name, fig in figures.items():
        wall = f"{fig['wall_s']:.2f}" if "wall_s" in fig else "-"
        lines.append(f"| {name} | {wall} | {fig['peak_rss_mb']:.0f} | {fig['peak_rss_mb'] - base:.0f} |")
    naive = figures["naive json.loads of every line"]["peak_rss_mb"] - base
    above = max(ours["peak_rss_mb"] - base, 0.0)
    kept = ours["kept_chars"] / 2**20
    per_kept = f", {above / kept:.1f}x the step text it keeps" if kept >= 1 else ""
    lines += ["", f"Memory above the import: skillgrad {above / naive:.2f}x the naive read's{per_kept}."]
    return "\n".join(lines)


def write_docs(docs: Path, command: str, body: str) -> None:
    text = docs.read_text(encoding="utf-8")
    section = f"{MARK}\nProduced by\n\n    {command}\n\n{body}\n{END}"
    if MARK in text:
        head, rest = text.split(MARK, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Reading large Claude Code sessions\n\n" + section + "\n"
    docs.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, required=True, help="folder of real session files (*.jsonl)")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--write-docs", type=Path, help="replace this script's section in that markdown file")
    args = parser.parse_args(argv)
    files = sorted(args.real.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"{args.real}: no *.jsonl session files")
    largest = max((f for f in files if not f.name.endswith(".stream.jsonl")), key=lambda f: f.stat().st_size)
    shapes = {
        f"Every real file, concatenated {args.repeat} times": files,
        f"{largest.name}, repeated {args.repeat} times as one run": [largest],
    }
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for title, parts in shapes.items():
            session = Path(tmp) / "large.jsonl"
            size = build_session(parts, args.repeat, session)
            figures = {name: probe(code, session) for name, code in PROBES.items()}
            tables.append(table(title, size, figures))
            session.unlink()
    body = "\n\n".join([per_file_table(args.real, 4000), *tables])
    print(body)
    if args.write_docs:
        command = f"python bench/trace_parse.py --real {args.real} --repeat {args.repeat}"
        write_docs(args.write_docs, command, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
