"""Checks a candidate skill passes before it costs a validation run: the size budget, scripts
that parse (Python compiles, shell passes `bash -n`) and the package's own `self_test` command
(front matter of SKILL.md), run in the benchmarks' sandbox. A failed check skips the candidate
with the reason."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from skillgrad.benchmarks.sandbox import Sandbox
from skillgrad.package.doc import skill_demos
from skillgrad.package.folder import write_package
from skillgrad.package.model import SkillPackage, as_package, is_script

RUNNER = Path(__file__).with_name("selftest_runner.py")
_FRONT = "---"
OUTPUT_CHARS = 300  # of a failed check's output, in the reason


def front_matter(markdown: str) -> dict[str, object]:
    """SKILL.md's YAML front matter ({} when there is none or it does not parse)."""
    lines = markdown.splitlines()
    if not lines or lines[0].strip() != _FRONT:
        return {}
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == _FRONT), None)
    if end is None:
        return {}
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _bash_problem(path: str, text: str) -> str | None:
    bash = shutil.which("bash")
    if bash is None:
        return None  # nothing to check with; the harness would not run it either
    proc = subprocess.run([bash, "-n"], input=text, capture_output=True, text=True, timeout=10, check=False)
    if proc.returncode == 0:
        return None
    detail = proc.stderr.strip().replace("bash: ", "").splitlines()[-1][:OUTPUT_CHARS] if proc.stderr else ""
    return f"{path} fails bash -n: {detail}"


def script_problem(package: SkillPackage) -> str | None:
    """The first script that does not parse, with the error (None when every script parses)."""
    for path in package.paths():
        text = package.files.get(path)
        if text is None or not is_script(path, text):
            continue
        if path.endswith(".py") or (text.startswith("#!") and "python" in text.splitlines()[0]):
            try:
                compile(text, path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None)
                return f"{path} does not compile: line {line}: {getattr(exc, 'msg', exc)}"
        elif problem := _bash_problem(path, text):
            return problem
    return None


@dataclass
class CandidateChecks:
    """`problem(text)`: why a candidate skill cannot be validated, or None."""

    budget: int | None
    self_test_timeout_s: float
    max_examples: int | None = None  # the most worked examples a candidate may hold (None: any)
    _sandbox: Sandbox | None = None

    def _self_test(self, package: SkillPackage) -> str | None:
        command = front_matter(package.skill_md).get("self_test")
        if not isinstance(command, str) or not command.strip():
            return None
        if self._sandbox is None:
            self._sandbox = Sandbox(timeout_s=self.self_test_timeout_s, memory_mb=1024)
        with tempfile.TemporaryDirectory(prefix="skillgrad-selftest-") as tmp:
            folder = Path(tmp) / "skill"
            write_package(folder, package)
            path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
            run = self._sandbox.run_python([str(RUNNER), command], folder, {"PATH": path})
        if run.timed_out:
            return f"self_test {command!r} timed out after {self.self_test_timeout_s:g} s"
        if run.returncode != 0:
            tail = (run.stderr.strip() or run.stdout.strip())[-OUTPUT_CHARS:]
            return f"self_test {command!r} exited {run.returncode}: {tail}"
        return None

    def problem(self, text: str) -> str | None:
        package = as_package(text)
        size = package.chars() if package is not None else len(text)
        if self.budget is not None and size > self.budget:
            return f"the skill is {size} chars, over skill.max_chars={self.budget}"
        examples = len(skill_demos(text))
        if self.max_examples is not None and examples > self.max_examples:
            return f"the skill holds {examples} worked examples, over skill.max_examples={self.max_examples}"
        if package is None:
            return None
        return script_problem(package) or self._self_test(package)
