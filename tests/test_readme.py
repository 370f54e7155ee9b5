"""The README is the user's door: its two set-up commands stay true, it stays short, and every link
in it leads to a file of the repository (the docs site's own links are checked by
`mkdocs build --strict`; the config reference it once held is generated: tests/test_docs.py)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_exactly_two_setup_commands():
    head = README.split("## ", 1)[0]
    blocks = [b.split("\n", 1)[1].strip() for b in head.split("```")[1::2]]  # drop the language tag
    assert len(blocks) == 2
    assert "skillgrad train --config configs/quickstart.yaml" in blocks[0]
    assert "pytest" in blocks[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert blocks[1] in ci.splitlines()  # CI runs the README's test command, verbatim


def test_readme_is_a_door_not_a_reference():
    assert len(README.splitlines()) <= 200
    assert "](docs/reference/configuration.md)" in README and "| `optimizer." not in README
    picture = re.search(r"!\[[^\]]+\]\((docs/assets/[\w-]+\.svg)\)", README)
    assert picture and (REPO / picture.group(1)).read_text(encoding="utf-8").startswith("<svg")


def test_every_link_of_the_readme_leads_to_a_repository_file_and_its_heading():
    links = re.findall(r"\]\(([^)#\s]+)(?:#([\w-]+))?\)", README)
    assert len(links) > 15
    broken = []
    for target, anchor in links:
        if target.startswith("http"):
            continue
        path = REPO / target
        if not path.is_file():
            broken.append(target)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-") for h in headings}
            if anchor not in slugs:
                broken.append(f"{target}#{anchor}")
    assert not broken, f"README links that lead nowhere: {broken}"
