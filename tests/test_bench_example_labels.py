"""bench/example_labels.py: the labels of a skill's worked examples (skillgrad's examples section,
DSPy's demos), their share of the test items, the within-benchmark fit and its permutation test,
and the script end to end on rows and a BBH file written here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import example_labels as el  # noqa: E402

from skillgrad.demos import Demo, with_demos  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def skillgrad_row(
    labels: list[str], test: float = 0.5, benchmark: str = "bbh_geometric_shapes", seed: int = 0
) -> dict:
    demos = [
        Demo(f"t{i}", f"Which one? Options: (A) one (B) two [{i}]", label) for i, label in enumerate(labels)
    ]
    skill = with_demos("Reply with the label alone.\n", demos)
    return {
        "benchmark": benchmark,
        "seed": seed,
        "system": "skillgrad",
        "best_skill": skill,
        "test_after": test,
    }


def dspy_row(
    labels: list[str], test: float = 0.5, benchmark: str = "bbh_geometric_shapes", seed: int = 0
) -> dict:
    messages = [{"role": "system", "content": "Your input fields are: `question`"}]
    for i, label in enumerate(labels):
        messages.append({"role": "user", "content": f"[[ ## question ## ]]\nWhich one? [{i}]"})
        messages.append(
            {"role": "assistant", "content": f"[[ ## answer ## ]]\n{label}\n\n[[ ## completed ## ]]\n"}
        )
    messages.append({"role": "user", "content": "[[ ## question ## ]]\n{question}"})
    return {
        "benchmark": benchmark,
        "seed": seed,
        "system": "dspy",
        "best_skill": json.dumps(messages),
        "test_after": test,
    }


def test_the_examples_labels_are_read_in_order_from_either_systems_skill() -> None:
    assert el.example_labels(skillgrad_row(["(B)", "(A)", "(B)"])) == ["(b)", "(a)", "(b)"]
    assert el.example_labels(dspy_row(["(K)", "(I)"])) == ["(k)", "(i)"]
    assert el.example_labels({"system": "dspy", "best_skill": "not json"}) == []
    assert el.example_labels({"system": "dspy", "best_skill": "42"}) == []
    assert el.example_labels({"system": "skillgrad", "best_skill": "Just a rule."}) == []


def test_shares_are_of_the_test_items_and_only_option_labels_count() -> None:
    labels = el.Labels(train=["(b)"] * 3 + ["(a)"], val=["(a)"] * 5, test=["(a)"] * 6 + ["(b)"] * 2)
    row = el.measured(skillgrad_row(["(a)", "(b)"], test=0.25), labels)
    assert row is not None
    assert (row.last_share, row.mean_share, row.test) == (0.25, 0.5, 0.25)
    # train's most frequent label is (b): already last; with val counted (a) goes last
    assert (row.by_train, row.by_train_val) == (0.25, 0.75)
    numbers = el.Labels(train=["3"], val=["4"], test=["3", "4"])
    assert el.measured(skillgrad_row(["3", "4"]), numbers) is None
    assert el.measured(skillgrad_row([]), labels) is None


def test_ties_go_to_the_later_example() -> None:
    from collections import Counter

    assert el.last_by(["(a)", "(b)", "(c)"], Counter({"(a)": 2, "(c)": 2})) == "(c)"
    assert el.last_by(["(a)", "(b)"], Counter()) == "(b)"


def fitted_rows(tests: list[float], shares: list[float]) -> list[el.Row]:
    half = len(tests) // 2
    return [
        el.Row("b1" if i < half else "b2", i, "skillgrad", ["(a)"], t, s, s, s, s)
        for i, (t, s) in enumerate(zip(tests, shares, strict=True))
    ]


def test_the_fit_is_within_benchmarks_and_its_permutation_test_can_reject_and_accept() -> None:
    shares = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    # b2's scores sit 0.5 higher: a pooled fit would see that, the centered one must not
    linked = fitted_rows([s + (0.5 if i >= 6 else 0.0) for i, s in enumerate(shares)], shares)
    corr, slope = el.fit(el.centered(linked, "last_share"), el.centered(linked, "test"))
    assert corr == pytest.approx(1.0) and slope == pytest.approx(1.0)
    assert el.permutation_p(linked, "last_share", draws=2000) < 0.01
    unlinked = fitted_rows([0.3, 0.1, 0.5, 0.1, 0.3, 0.5, 0.5, 0.3, 0.1, 0.3, 0.1, 0.5], shares)
    assert el.permutation_p(unlinked, "last_share", draws=2000) > 0.2
    flat = fitted_rows([0.3] * 12, shares)
    assert el.fit(el.centered(flat, "last_share"), el.centered(flat, "test")) == (0.0, 0.0)


def write_bbh(root: Path, task: str, targets: list[str]) -> None:
    options = "Options:\n(A) circle\n(B) line"
    examples = [{"input": f"Shape number {i}?\n{options}", "target": t} for i, t in enumerate(targets)]
    (root / "bbh").mkdir(parents=True, exist_ok=True)
    (root / "bbh" / f"{task}.json").write_text(json.dumps({"canary": "x", "examples": examples}))


def test_the_script_reads_the_rows_and_prints_each_ones_shares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    write_bbh(data, "geometric_shapes", ["(A)"] * 60)  # every test item's label is (A)
    out = tmp_path / "rows"
    rows = {
        "skillgrad": skillgrad_row(["(B)", "(A)"], test=0.75),
        "dspy": dspy_row(["(A)", "(B)"], test=0.25),
        "gepa": {
            "benchmark": "bbh_geometric_shapes",
            "seed": 0,
            "system": "gepa",
            "best_skill": "x",
            "test_after": 0.0,
        },
    }
    for system, row in rows.items():
        path = out / "bbh_geometric_shapes" / "seed0" / f"{system}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(row))
    assert el.main(["--data-root", str(data), "--out", str(out), "--work", str(tmp_path / "work")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "| bbh_geometric_shapes | 0 | skillgrad | (b) (a) | 1.00 | 0.50 | 0.750 |" in printed
    assert "| bbh_geometric_shapes | 0 | dspy | (a) (b) | 0.00 | 0.50 | 0.250 |" in printed
    assert not any("gepa" in line for line in printed)
    assert printed[-1] == "2 rows: too few for a fit"


def test_a_missing_rows_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        el.main(["--data-root", str(tmp_path), "--out", str(tmp_path / "nowhere")])
    assert stop.value.code == 2
