"""The README is the user's contract: its two set-up commands and its config table stay true."""

from pathlib import Path

from skillgrad.config import Config

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_config_key_is_in_the_reference_table():
    table = README[README.index("## Configuration reference") :]
    missing = []
    for section, field in Config.model_fields.items():
        if field.exclude:
            continue
        for key in field.annotation.model_fields:  # type: ignore[union-attr]
            if f"`{section}.{key}`" not in table and f"`{key}`" not in table and f"/ `{key}`" not in table:
                missing.append(f"{section}.{key}")
    assert not missing, f"config keys missing from the README table: {missing}"


def test_readme_starts_with_exactly_two_setup_commands():
    head = README.split("## ", 1)[0]
    blocks = [b.split("\n", 1)[1].strip() for b in head.split("```")[1::2]]  # drop the language tag
    assert len(blocks) == 2
    assert "skillgrad train --config configs/quickstart.yaml" in blocks[0]
    assert "pytest" in blocks[1]
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert blocks[1] in ci.splitlines()  # CI runs the README's test command, verbatim
