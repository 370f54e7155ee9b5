"""The documentation says what the code does: the configuration reference generated from the config
model holds every key, each with a description, and every command in the README and docs/ runs as
written, or is marked with what it needs (an API key, a model run, the network, the reader's own
files, a cluster) and then at least parses.

A mark is a comment line right before a ```bash block, `<!-- docs-check: REASON (why) -->`, or one
for every block of its page, `<!-- docs-check-all: REASON (why) -->`. An unmarked block runs, each
line in bash from the repository root, and must exit 0 and print something. A marked block's
commands are parsed instead: `skillgrad ...` through the CLI's own parser and config loader (the
subcommand, its flags, every `--set` key and value, a repository config file it names); a script
under bench/ or examples/ exists and its `--help` lists every flag used (each script is asked
once); `pip install -e '.[EXTRA]'` names extras of pyproject.toml;
`npm install -g @openai/codex@V` is the version CI pins. Marking, not running, is for what cannot
run here or takes minutes: the suite's time stays small (the runnable blocks take about a second)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from skillgrad.benchmarks.catalog import BUILTINS
from skillgrad.config import Config, load_config
from skillgrad.config.reference import render_reference, sections
from skillgrad.errors import UserError

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
REASONS = {"key", "model", "slow", "network", "yours", "cluster"}
MARK = re.compile(r"<!-- docs-check(-all)?: (\w+)(?: \(.*\))? -->")
WRAPPERS = {"flock": 1, "timeout": 1, "nice": 2, "time": 0}  # prefix -> arguments it takes
NOT_OURS = {"export", "cd", "mkdir", "git", "tar", "jq", "ray", "cat", "echo"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    text: str
    reason: str | None  # None: it runs

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def bash_blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    page_mark = next((m for m in map(MARK.fullmatch, lines) if m and m.group(1)), None)
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() in ("```bash", "```sh", "```console"):
            end = lines.index("```", i + 1)
            mark = MARK.fullmatch(lines[i - 1]) if i else None
            mark = mark if mark and not mark.group(1) else page_mark
            blocks.append(Block(page, i + 1, "\n".join(lines[i + 1 : end]), mark.group(2) if mark else None))
            i = end
        i += 1
    return blocks


BLOCKS = [block for page in PAGES for block in bash_blocks(page)]


def commands(text: str) -> list[list[str]]:
    """The simple commands of a block: continuation lines joined, comments dropped, split at
    `&&`, `||`, `;` and `|`, wrappers (`flock FILE`, `timeout N`, `nice -n N`, `VAR=value`)
    taken off."""
    found: list[list[str]] = []
    for line in block_lines(text):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        found.append([])
        for token in lexer:
            if token in ("&&", "||", ";", "|"):
                found.append([])
            else:
                found[-1].append(token)
    result = []
    for argv in found:
        while argv and (argv[0] in WRAPPERS or re.fullmatch(r"[A-Z_]+=\S*", argv[0])):
            argv = argv[1 + WRAPPERS.get(argv[0], 0) :]
        if argv:
            result.append(argv)
    return result


def block_lines(text: str) -> list[str]:
    return [line for line in text.replace("\\\n", " ").split("\n") if line.strip()]


def check_skillgrad(argv: list[str]) -> None:
    from skillgrad.cli import _overrides, _parser, _roles

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"`skillgrad {' '.join(argv)}` does not parse (exit {exc.code})") from None
    if getattr(args, "overrides", None) is None:
        return
    config = getattr(args, "config", None)
    in_repo = config is not None and (REPO / config).is_file()
    assert in_repo or not (config or "").startswith("configs/"), f"{config}: no such config in the repository"
    args.data = None  # the reader's own data file: only its path is theirs to give
    try:
        load_config(REPO / config if in_repo else None, _overrides(args), **_roles(args))
    except UserError as exc:
        raise AssertionError(f"`skillgrad {' '.join(argv)}`: {exc}") from None


@cache
def script_help(script: str) -> str:
    proc = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, f"{script} --help: {proc.stderr[-500:]}"
    return proc.stdout


def flags(argv: list[str]) -> list[str]:
    return [a.split("=", 1)[0] for a in argv if a.startswith("--") and a != "--help"]


def check_python(argv: list[str]) -> None:
    if argv[1:3] == ["-m", "pytest"]:
        return  # the test command: tests/test_readme.py checks CI runs it
    if argv[1:3] == ["-m", "skillgrad.cli"]:
        return check_skillgrad(argv[3:])
    script = argv[1]
    assert (REPO / script).is_file(), f"python {script}: no such file in the repository"
    missing = [
        f for f in flags(argv) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", script_help(script))
    ]
    assert not missing, f"python {script}: its --help lists no {missing}"


def check_pip(argv: list[str]) -> None:
    assert argv[1:3] == ["install", "-e"], f"`{' '.join(argv)}`: only the project's own install is documented"
    extras = re.fullmatch(r"\.(?:\[([\w,]+)\])?", argv[3])
    assert extras, f"pip install -e {argv[3]}: not this checkout"
    known = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    unknown = set((extras.group(1) or "").split(",")) - {""} - set(known["optional-dependencies"])
    assert not unknown, f"pip install -e {argv[3]}: pyproject.toml has no extra {sorted(unknown)}"


def check_npm(argv: list[str]) -> None:
    lock = (REPO / ".ci" / "codex" / "package.json").read_text(encoding="utf-8")
    package = argv[-1]
    assert package.startswith("@openai/codex@"), f"npm {' '.join(argv[1:])}: not the Codex CLI"
    assert f'"{package.rsplit("@", 1)[1]}"' in lock, f"{package}: not the version .ci/codex pins"


CHECKS = {"skillgrad": lambda a: check_skillgrad(a[1:]), "python": check_python, "pip": check_pip}
CHECKS["npm"] = check_npm
CHECKS["mkdocs"] = lambda a: None if (REPO / "mkdocs.yml").is_file() else pytest.fail("no mkdocs.yml")


def check_parses(block: Block) -> None:
    for argv in commands(block.text):
        if argv[0] in NOT_OURS:
            continue
        assert argv[0] in CHECKS, f"{block}: `{argv[0]}` is not a command the docs may use"
        CHECKS[argv[0]](argv)


def test_every_block_is_checked_and_every_mark_names_a_known_need() -> None:
    assert len(BLOCKS) > 30 and any(b.page.name == "README.md" for b in BLOCKS)
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            if "docs-check" in line:
                mark = MARK.fullmatch(line)
                assert mark and mark.group(2) in REASONS, f"{page.relative_to(REPO)}:{number}: {line}"
    assert [b for b in BLOCKS if b.reason is None], "no block of the docs runs"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.reason is not None], ids=str)
def test_each_marked_command_parses(block: Block) -> None:
    check_parses(block)


def test_each_unmarked_command_runs(tmp_path: Path) -> None:
    runnable = [(block, line) for block in BLOCKS if block.reason is None for line in block_lines(block.text)]
    for block, _ in runnable:
        check_parses(block)
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO), "NO_COLOR": "1"}

    def run(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, [line for _, line in runnable]))
    failed = [
        f"{block}: `{line}` exit {proc.returncode}: {proc.stderr[-300:]}"
        for (block, line), proc in zip(runnable, results, strict=True)
        if proc.returncode != 0 or not proc.stdout.strip()
    ]
    assert not failed, "\n".join(failed)


def test_a_broken_command_is_caught() -> None:
    """The checks can fail: a misspelt key, flag, extra or script each fails its check."""
    broken = [
        "skillgrad train --config configs/quickstart.yaml --set optimizer.serch=frontier",
        "skillgrad train --config configs/quickstart.yaml --estmate",
        "skillgrad train --config configs/nonesuch.yaml",
        "pip install -e '.[locall]'",
        "python bench/nonesuch.py",
        "python bench/vs_gepa.py --seedz 0",
        "npm install -g @openai/codex@0.0.1",
    ]
    for text in broken:
        with pytest.raises(AssertionError):
            check_parses(Block(REPO / "README.md", 0, text, "yours"))


def test_the_configuration_reference_holds_every_key_with_a_description() -> None:
    rendered = render_reference()
    documented = {key.key: key for section in sections() for key in section.keys}
    expected = [
        f"{section}.{key}"
        for section, field in Config.model_fields.items()
        if not field.exclude
        for key in field.annotation.model_fields  # type: ignore[union-attr]
    ]
    assert sorted(documented) == sorted(expected)
    assert not [key for key in expected if f"| `{key}` |" not in rendered]
    assert not [key for key, doc in documented.items() if len(doc.description) < 10], (
        "a key without a description"
    )
    # the page the site renders it into holds the marker the build replaces (docs/hooks.py)
    page = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert "<!-- generated: configuration reference -->" in page
    assert "## Configuration reference" not in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_reference_shows_types_defaults_and_bounds_from_the_model() -> None:
    rows = {key.key: key for section in sections() for key in section.keys}
    assert (rows["train.concurrency"].type, rows["train.concurrency"].default) == ("int", "8")
    assert rows["train.concurrency"].allowed == "1 to 1024"
    assert rows["optimizer.gate_alpha"].allowed == "> 0, < 1"
    assert rows["optimizer.gate"].allowed == "`strict`, `paired`"
    assert (
        rows["model.target_backend"].type == "str or null"
        and "`claude_code_exec`" in rows["model.target_backend"].allowed
    )
    assert rows["cache.salt"].default == '`""`' and rows["model.api_key"].type == "secret str or null"
    missing = [name for name in BUILTINS if f"`{name}`" not in rows["benchmark.name"].description]
    assert not missing, f"benchmark.name's description does not name {missing}"
