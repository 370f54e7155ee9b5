"""Skill packages: loading with name checks, per-file edits, create, protected regions per file,
the encoded text form, installing and flattening."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillgrad.backends.workspace import prepare_workspace
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.loop.state import TrainState
from skillgrad.package.doc import PackageDoc, open_skill
from skillgrad.package.folder import load_package, read_skill_at, write_package
from skillgrad.package.install import flatten, skill_prompt_text
from skillgrad.package.model import SkillPackage, as_package, is_package, path_problem
from skillgrad.run_folder import RunDir
from skillgrad.session.resume import load_checkpoint
from skillgrad.skilldoc import Edit, SkillDoc
from skillgrad.values import Task

SKILL_MD = "---\ndescription: House CLI conventions\n---\n# House\n\n- Read references/flags.md first.\n"
FLAGS = (
    "# Flags\n\n- `--region` takes a two-letter code.\n"
    "<!-- protected -->\n- `--secret` is internal.\n<!-- /protected -->\n"
)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00binary"


def make_folder(root: Path) -> Path:
    (root / "references").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "assets").mkdir()
    (root / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (root / "references" / "flags.md").write_text(FLAGS, encoding="utf-8")
    (root / "scripts" / "check.py").write_text("print('ok')\n", encoding="utf-8")
    (root / "assets" / "logo.png").write_bytes(PNG)
    (root / ".DS_Store").write_bytes(b"junk")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\x00")
    return root


def test_load_folder_keeps_text_and_binary_and_skips_hidden(tmp_path: Path) -> None:
    package = load_package(make_folder(tmp_path / "skill"))
    assert sorted(package.files) == ["SKILL.md", "references/flags.md", "scripts/check.py"]
    assert package.binary == {"assets/logo.png": PNG}
    assert package.paths()[0] == "SKILL.md"
    assert package.chars() == len(SKILL_MD) + len(FLAGS) + len("print('ok')\n")


def test_encoded_text_round_trips_and_is_told_apart_from_markdown(tmp_path: Path) -> None:
    package = load_package(make_folder(tmp_path / "skill"))
    text = package.encode()
    assert is_package(text) and not is_package(SKILL_MD)
    assert SkillPackage.decode(text) == package
    assert as_package(SKILL_MD) is None
    assert package.encode() == SkillPackage.decode(text).encode()  # canonical: one text per package


def test_a_folder_without_skill_md_is_refused(tmp_path: Path) -> None:
    (tmp_path / "skill").mkdir()
    with pytest.raises(UserError, match="needs a SKILL.md"):
        load_package(tmp_path / "skill")


def test_symlink_out_of_the_package_is_refused_inside_is_copied(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "skill")
    (tmp_path / "secret.txt").write_text("key", encoding="utf-8")
    os.symlink(root / "references" / "flags.md", root / "references" / "alias.md")
    assert load_package(root).files["references/alias.md"] == FLAGS
    os.symlink(tmp_path / "secret.txt", root / "leak.md")
    with pytest.raises(UserError, match="outside the skill folder"):
        load_package(root)


def test_bad_file_names_are_refused(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "skill")
    (root / "bad name.md").write_text("x", encoding="utf-8")
    with pytest.raises(UserError, match="bad name.md"):
        load_package(root)


@pytest.mark.parametrize(
    "path", ["../x.md", "/etc/passwd", "a/../b.md", ".hidden.md", "a\\b.md", "", "a//b.md"]
)
def test_path_problem_refuses_escapes(path: str) -> None:
    assert path_problem(path) is not None


def test_path_problem_accepts_plain_paths() -> None:
    assert path_problem("references/flags.md") is None and path_problem("scripts/run_v2.sh") is None


def doc(tmp_path: Path, budget: int | None = None) -> PackageDoc:
    root = tmp_path / "skill"
    package = load_package(root if root.is_dir() else make_folder(root))
    opened = open_skill(package.encode(), budget)
    assert isinstance(opened, PackageDoc)
    return opened


def test_edit_names_its_file(tmp_path: Path) -> None:
    edit = Edit(
        "replace",
        "- `--region` takes a two-letter code.",
        "- `--region` takes an upper-case ISO code.",
        file="references/flags.md",
    )
    new, outcome = doc(tmp_path).apply_one(edit)
    assert outcome.status == "applied", outcome.reason
    assert "upper-case ISO code" in new.package.files["references/flags.md"]
    assert new.package.files["SKILL.md"] == SKILL_MD
    # the same edit on SKILL.md does not find its target there
    _, missed = doc(tmp_path).apply_one(Edit("replace", edit.target, edit.content))
    assert missed.status == "skipped" and "not found" in missed.reason


def test_protected_regions_hold_in_every_file(tmp_path: Path) -> None:
    edit = Edit("delete", "- `--secret` is internal.", file="references/flags.md")
    _, outcome = doc(tmp_path).apply_one(edit)
    assert outcome.status == "skipped" and "protected" in outcome.reason


def test_binary_and_missing_files_are_never_edited(tmp_path: Path) -> None:
    _, binary = doc(tmp_path).apply_one(Edit("add", "end", "text", file="assets/logo.png"))
    assert binary.status == "skipped" and "binary" in binary.reason
    _, missing = doc(tmp_path).apply_one(Edit("add", "end", "text", file="references/none.md"))
    assert missing.status == "skipped" and "use op create" in missing.reason
    _, escape = doc(tmp_path).apply_one(Edit("create", "", "text", file="../outside.md"))
    assert escape.status == "skipped" and "not allowed" in escape.reason


def test_create_adds_a_file_within_limits(tmp_path: Path) -> None:
    new, outcome = doc(tmp_path).apply_one(
        Edit("create", "", "# Regions\n\n- EU, US\n", file="references/regions.md")
    )
    assert outcome.status == "applied"
    assert new.package.files["references/regions.md"] == "# Regions\n\n- EU, US\n"
    _, exists = new.apply_one(Edit("create", "", "again", file="references/regions.md"))
    assert exists.status == "skipped" and "already exists" in exists.reason
    _, big = doc(tmp_path).apply_one(Edit("create", "", "x" * 500, file="references/big.md"), max_chars=300)
    assert big.status == "skipped" and "500 chars" in big.reason
    _, suffix = doc(tmp_path).apply_one(Edit("create", "", "x", file="scripts/tool.exe"))
    assert suffix.status == "skipped" and "ends with one of" in suffix.reason


def test_budget_holds_the_whole_package(tmp_path: Path) -> None:
    package_doc = doc(tmp_path)
    budget = package_doc.package.chars() + 20
    _, outcome = doc(tmp_path, budget).apply_one(Edit("create", "", "y" * 50, file="references/more.md"))
    assert outcome.status == "skipped"
    assert (
        f"over skill.max_chars={budget}" in outcome.reason
        and str(package_doc.package.chars() + 51) in outcome.reason
    )


def test_single_file_skills_refuse_package_edits() -> None:
    _, create = SkillDoc("# Skill\n").apply_one(Edit("create", "", "x", file="references/a.md"))
    assert create.status == "skipped" and "skill package" in create.reason
    assert Edit("add", "end", "x").to_json() == {
        "op": "add",
        "target": "end",
        "content": "x",
        "rationale": "",
    }
    assert (
        Edit.from_json({"op": "add", "target": "end", "content": "x", "file": "references/a.md"}).file
        == "references/a.md"
    )


def test_version_folders_round_trip(tmp_path: Path) -> None:
    package = load_package(make_folder(tmp_path / "skill"))
    write_package(tmp_path / "run" / "skills" / "v0001", package)
    write_package(tmp_path / "run" / "skills" / "v0001", package.with_file("references/flags.md", "# New\n"))
    assert (tmp_path / "run" / "skills" / "v0001" / "references" / "flags.md").read_text() == "# New\n"
    assert sorted(p.name for p in (tmp_path / "run" / "skills").iterdir()) == ["v0001"]  # no staging left
    again = SkillPackage.decode(read_skill_at(tmp_path / "run" / "skills" / "v0001"))
    assert again.binary == package.binary and again.files["references/flags.md"] == "# New\n"
    (tmp_path / "run" / "skills" / "v0000.md").write_text("# single\n")
    assert read_skill_at(tmp_path / "run" / "skills" / "v0000") == "# single\n"


def test_harness_workspace_gets_the_whole_folder(tmp_path: Path) -> None:
    package = load_package(make_folder(tmp_path / "skill"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    skill_file = prepare_workspace(
        workspace, Task("t1", "Do it"), package.encode(), "house", ".claude/skills"
    )
    folder = skill_file.parent
    assert skill_file.read_text().startswith("---\nname: house\n")
    assert (
        "House CLI conventions" in skill_file.read_text()
        and "Read references/flags.md first." in skill_file.read_text()
    )
    assert (folder / "references" / "flags.md").read_text() == FLAGS
    assert (folder / "assets" / "logo.png").read_bytes() == PNG
    assert (workspace / "task.md").is_file()


def test_chat_targets_get_the_package_flattened(tmp_path: Path) -> None:
    package = load_package(make_folder(tmp_path / "skill"))
    flat = flatten(package)
    assert flat.startswith(SKILL_MD.strip()[:20])
    assert "## File: references/flags.md\n\n# Flags" in flat
    assert "- scripts/check.py (script, 12 chars)" in flat and "print('ok')" not in flat
    assert "- assets/logo.png (binary" in flat
    assert skill_prompt_text(package.encode()) == flat and skill_prompt_text(SKILL_MD) == SKILL_MD


def test_codex_gets_the_folder_where_it_discovers_skills(tmp_path: Path) -> None:
    from skillgrad.backends.codex_exec import SKILLS_DIR

    package = load_package(make_folder(tmp_path / "skill"))
    skill_file = prepare_workspace(tmp_path, Task("t1", "Do it"), package.encode(), "house", SKILLS_DIR)
    assert skill_file == tmp_path / ".agents" / "skills" / "house" / "SKILL.md"
    assert (skill_file.parent / "scripts" / "check.py").read_text() == "print('ok')\n"


def test_resume_rewrites_a_best_skill_folder_a_kill_left_half_swapped(tmp_path: Path) -> None:
    """best_skill/ is swapped by two renames; a kill between them leaves only .best_skill.old.
    The resume point restores best_skill/ from the best version that skills/ keeps."""
    cfg = Config.model_validate({})
    run = RunDir(tmp_path / "run")
    run.create()
    first = load_package(make_folder(tmp_path / "v0")).encode()
    (tmp_path / "v1" / "references").mkdir(parents=True)
    (tmp_path / "v1" / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (tmp_path / "v1" / "references" / "flags.md").write_text(FLAGS + "- `--dry` prints only.\n")
    best = load_package(tmp_path / "v1").encode()
    run.write_skill(0, first)
    run.write_skill(1, best)
    run.write_best_skill(first)
    state = TrainState(step=1, version=1, best_version=1, best_step=1, best_score=1.0, accepted=1)
    run.append_history({"step": 1, "action": "accepted", "version": "v0001"})  # as a real step leaves
    run.write_state({**state.to_json(), "ledger": Ledger(cfg.budget).to_json()})
    (run.root / "best_skill").rename(run.root / ".best_skill.old")  # the kill, mid-swap

    loaded, _ = load_checkpoint(run.root, cfg)

    assert loaded is not None and loaded.best_version == 1
    assert run.best_skill_path() == run.root / "best_skill"
    assert read_skill_at(run.root / "best_skill") == best
