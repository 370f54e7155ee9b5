"""What the end-to-end tests write before they run `skillgrad train`: a JSONL data file and a
config.yaml of one short epoch (the sections they share; each test adds its own model lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """One JSON object a line (JSON escapes kept: a lone surrogate stays `\\ud800` on disk)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def capitals_data(tmp_path: Path, capitals: dict[str, str]) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"What is the capital of {country}?", "answers": [city]}
        for i, (country, city) in enumerate(capitals.items())
    ]
    return write_jsonl(tmp_path / "capitals.jsonl", rows)


def qa_lines(data: Path, size: int, *, seed: int | None = 1) -> list[str]:
    """A qa benchmark of `size` train and `size` val tasks, no test split."""
    lines = ["benchmark:", "  name: qa", f"  data: {data}", f"  train_size: {size}", f"  val_size: {size}"]
    return [*lines, "  test_size: 0", *([f"  seed: {seed}"] if seed is not None else [])]


def one_epoch_lines(size: int, cache: Path | None) -> list[str]:
    """One epoch of one batch and one minibatch of `size`, `size` calls at once, 2 edits a step."""
    lines = [
        "train:",
        "  epochs: 1",
        f"  batch_size: {size}",
        f"  minibatch_size: {size}",
        f"  concurrency: {size}",
    ]
    lines += ["optimizer:", "  learning_rate: 2", "  min_learning_rate: 1"]
    return lines + (["cache:", f"  dir: {cache}"] if cache is not None else [])


def write_config(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
