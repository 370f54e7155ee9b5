"""What the optimizer sees of each real session, and the time and memory of reading large ones.

First, per real session file (every *.jsonl of the folders given), the default view (4000
characters) read back by `skillgrad.traces.view_read`: steps shown, errors accounted for (shown,
collapsed or counted by a gap marker), user turns shown, and the status with the evidence for it.

Then three large sessions, each `--repeat` times (default 50) real files: every Claude Code file
concatenated (hundreds of appended runs, of which the view shows the last), the largest Claude Code
transcript repeated as one run (every step is kept), and the largest Codex rollout repeated. Each
figure comes from a fresh child process (peak RSS is per process): the import alone, skillgrad's
streaming parse plus the view, and, side by side, a bare `json.loads` of every line of the file
into a list (what a non-streaming parser holds at its peak before it makes a step). Timed probes
alternate `--runs` times (default 3); the ratio compares the run of each that took the least CPU
time, which other processes on a shared machine do not inflate (wall time is shown beside it).

    python bench/trace_parse.py --real ../shared/reference/claude-code/real \\
        ../shared/reference/claude-code/real-new ../shared/reference/codex/real
    python bench/trace_parse.py --real ... --write-docs docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

IMPORTS = "import json, resource, sys, time\nfrom skillgrad.traces.any_session import load_any_session\n"
OURS = "skillgrad parse + view"
NAIVE = "bare json.loads of every line"
PROBES = {
    "import only": "",
    OURS: (
        "from skillgrad.traces.view import render_view\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "s = load_any_session(sys.argv[1]); v = render_view(s.steps)\n"
        "out = {'wall_s': time.perf_counter() - t, 'cpu_s': time.process_time() - c, 'steps': len(s.steps),\n"
        "       'runs': s.runs, 'kept_chars': sum(len(x.text) for x in s.steps), 'view_chars': len(v)}\n"
    ),
    NAIVE: (
        "t, c = time.perf_counter(), time.process_time()\n"
        "rows = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]\n"
        "out = {'wall_s': time.perf_counter() - t, 'cpu_s': time.process_time() - c, 'records': len(rows)}\n"
    ),
}
REPORT = "out = locals().get('out', {}); out['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\nprint(json.dumps(out))\n"  # noqa: E501
MARK = "<!-- bench/trace_parse.py -->"
END = "<!-- /bench/trace_parse.py -->"


def per_file_table(files: list[Path], budget: int) -> str:
    from skillgrad.traces.any_session import load_any_session
    from skillgrad.traces.steps import TraceCaps
    from skillgrad.traces.view import render_view
    from skillgrad.traces.view_read import read_view

    lines = [
        f"Per real file, the default view ({budget} characters); errors are accounted for when shown, "
        "counted on a collapsed line or counted by a gap marker:",
        "",
        "| file | steps shown / total | errors accounted / total | user turns shown / total | view chars "
        "| status (evidence) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for path in files:
        session = load_any_session(path)
        view = render_view(session.steps, TraceCaps(total_chars=budget))
        account = read_view(view, session.steps)
        errors = sum(1 for s in session.steps if s.is_error and s.kind != "tool_call")
        users = sum(1 for s in session.steps if s.kind == "user")
        name = f"{path.parent.parent.name}/{path.parent.name}/{path.name}"
        lines.append(
            f"| {name} | {len(account.shown)} / {len(session.steps)} "
            f"| {account.errors} / {errors} | {len(account.users_shown) + account.users_collapsed} / {users} "
            f"| {len(view)} | {session.status} ({session.evidence}) |"
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


def measure(session: Path, runs: int) -> dict[str, dict[str, float]]:
    """Each probe's figures: its fastest of `runs` alternating runs, with the highest peak RSS."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in PROBES}
    for _ in range(runs):
        for name, code in PROBES.items():
            results[name].append(probe(code, session))
    return {
        name: min(rs, key=lambda r: r.get("cpu_s", 0.0)) | {"peak_rss_mb": max(r["peak_rss_mb"] for r in rs)}
        for name, rs in results.items()
    }


def table(title: str, size: int, figures: dict[str, dict[str, float]], runs: int) -> str:
    base = figures["import only"]["peak_rss_mb"]
    ours, naive = figures[OURS], figures[NAIVE]
    lines = [
        f"{title}: {size / 2**20:.1f} MiB, {int(ours['runs'])} run(s); the view is built from the last "
        f"run's {int(ours['steps'])} steps ({ours['kept_chars'] / 2**20:.1f} MiB of step text kept).",
        "",
        f"| what | CPU s (least of {runs}) | wall s (that run) | peak RSS MiB | RSS above the import MiB |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, fig in figures.items():
        cpu = f"{fig['cpu_s']:.2f}" if "cpu_s" in fig else "-"
        wall = f"{fig['wall_s']:.2f}" if "wall_s" in fig else "-"
        rss = fig["peak_rss_mb"]
        lines.append(f"| {name} | {cpu} | {wall} | {rss:.0f} | {rss - base:.0f} |")
    above = max(ours["peak_rss_mb"] - base, 0.0)
    naive_above = max(naive["peak_rss_mb"] - base, 1.0)
    kept = ours["kept_chars"] / 2**20
    per_kept = f", {above / kept:.1f}x the step text it keeps" if kept >= 1 else ""
    lines += [
        "",
        f"Time: skillgrad {ours['cpu_s'] / naive['cpu_s']:.2f}x the bare json.loads (CPU time; "
        f"{ours['wall_s'] / naive['wall_s']:.2f}x in wall time). Memory above the "
        f"import: skillgrad {above / naive_above:.2f}x the bare read's{per_kept}.",
    ]
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


def shapes(files: list[Path], repeat: int) -> dict[str, list[Path]]:
    claude = [f for f in files if not f.name.endswith(".codex.jsonl") and "codex" not in f.parent.parts]
    codex = [f for f in files if f not in claude]
    out = {f"Every Claude Code real file, concatenated {repeat} times": claude}
    transcripts = [f for f in claude if not f.name.endswith(".stream.jsonl")]
    if transcripts:
        largest = max(transcripts, key=lambda f: f.stat().st_size)
        out[f"{largest.name}, repeated {repeat} times as one run"] = [largest]
    if codex:
        largest = max(codex, key=lambda f: f.stat().st_size)
        out[f"{largest.name} (a Codex rollout), repeated {repeat} times"] = [largest]
    return {title: parts for title, parts in out.items() if parts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, nargs="+", required=True, help="folders of real session files")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3, help="alternating runs of each timed probe")
    parser.add_argument("--write-docs", type=Path, help="replace this script's section in that markdown file")
    args = parser.parse_args(argv)
    files = [f for folder in args.real for f in sorted(folder.glob("*.jsonl"))]
    if not files:
        raise SystemExit(f"{' '.join(map(str, args.real))}: no *.jsonl session files")
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for title, parts in shapes(files, args.repeat).items():
            session = Path(tmp) / "large.jsonl"
            size = build_session(parts, args.repeat, session)
            tables.append(table(title, size, measure(session, args.runs), args.runs))
            session.unlink()
    body = "\n\n".join([per_file_table(files, 4000), *tables])
    print(body)
    if args.write_docs:
        folders = " ".join(str(f) for f in args.real)
        command = f"python bench/trace_parse.py --real {folders} --repeat {args.repeat} --runs {args.runs}"
        write_docs(args.write_docs, command, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
