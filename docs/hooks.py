"""mkdocs hooks: the generated pages. A page's marker line is replaced, at build time, by what the
code says now: the configuration reference from the config model (skillgrad.config.reference), the
Python API reference from the public names (skillgrad._EXPORTS, rendered by mkdocstrings) and each
command's help from the CLI's parser."""

from __future__ import annotations

import argparse
from typing import Any

CONFIG_MARKER = "<!-- generated: configuration reference -->"
API_MARKER = "<!-- generated: python api reference -->"
COMMANDS_MARKER = "<!-- generated: command help -->"


def command_help() -> str:
    """`skillgrad COMMAND --help` of every command, each under its own heading."""
    from skillgrad.cli import _parser

    parser = _parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: list[str] = []
    for name, sub in subparsers.choices.items():
        kind = sub.formatter_class  # a command's own (train's and eval's keep their examples' lines)
        sub.formatter_class = lambda prog, kind=kind: kind(prog, width=100)  # type: ignore[misc]
        out += [f"### `skillgrad {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def api_reference() -> str:
    """One mkdocstrings block per public name of `skillgrad`, under a heading per defining module."""
    import skillgrad

    out: list[str] = []
    module = ""
    for name, defined_in in skillgrad._EXPORTS.items():
        if defined_in != module:
            module = defined_in
            out += [f"## `{module}`", ""]
        out += [f"::: {defined_in}.{name}", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CONFIG_MARKER in markdown:
        from skillgrad.config.reference import render_reference

        table = render_reference()
        markdown = markdown.replace(
            CONFIG_MARKER, f'<div class="config-reference" markdown>\n\n{table}\n\n</div>'
        )
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    if COMMANDS_MARKER in markdown:
        markdown = markdown.replace(COMMANDS_MARKER, command_help())
    return markdown
