"""Issue 41, item 5: a skill is never cut mid-word by the local backend's length bound. A string
the bound closed ends at its last whole sentence or line, else after its last whole word; a rule
with no whole word left (one long word cut in two) is refused (its edit dropped). Against the
analyst's real reply schema, and against the real packaged model decoding under a tight bound."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from skillgrad.backends import local
from skillgrad.backends.local_models import pull_default_model
from skillgrad.backends.registry import make_chat
from skillgrad.backends.sentences import whole_sentences
from skillgrad.config import load_config
from skillgrad.loop.analyst_prompt import parse_patch, patch_schema
from skillgrad.skilldoc import SkillDoc
from skillgrad.values import Message

pytestmark = pytest.mark.timeout(180, method="thread")
SENTENCE_END = re.compile(r"[.!?][\"')\]*_`]*$")
SKILL = "# House facts\n- The support address is help@quokka.dev.\n"


def _reply(bounded: dict[str, Any], *edits: dict[str, str]) -> dict[str, Any]:
    text = json.dumps({"edits": list(edits)})
    out = json.loads(whole_sentences(text, bounded))
    jsonschema.validate(out, patch_schema(SKILL, 4))  # still valid against the caller's own schema
    return out


def _bounded(chars: int) -> dict[str, Any]:
    """The analyst's reply schema with every free string bounded at `chars`, as the local backend
    decodes it."""
    return local._bound(patch_schema(SKILL, 5), chars)


def test_a_rule_the_bound_cut_ends_at_its_last_sentence() -> None:
    bounded = _bounded(60)
    rule = "Always name the staging host. The reply includes a place-b"
    rationale = "task 3 asked for the staging host and the answer never named it at"
    assert len(rule) >= 58 and len(rationale) > 60
    rule, rationale = rule.ljust(60, "x")[:60], rationale[:60]  # what the grammar closed at the bound
    out = _reply(bounded, {"op": "add", "target": "end", "content": rule, "rationale": rationale})
    edit = out["edits"][0]
    assert edit["content"] == "Always name the staging host."
    assert edit["rationale"] == "task 3 asked for the staging host and the answer never"  # whole words
    # what the model ended itself (shorter than the bound) is left as it is, mid-sentence or not
    short = {"op": "add", "target": "end", "content": "Name the host", "rationale": "r"}
    assert _reply(bounded, short)["edits"] == [short]


def test_a_rule_with_no_whole_sentence_ends_at_a_word_and_one_cut_word_is_refused() -> None:
    bounded = _bounded(40)
    cut = "The support address for customers is help@quokka.dev"[:40]
    lines = "Name the on-call channel\n- and the staging host"[:40]
    url = "https://quokka.dev/wiki/house-facts/support-address"[:40]  # one word: nothing whole is left
    comma = "The staging server is used to build all,"  # 40 chars: its last word ends at the bound
    kept = {"op": "replace", "target": "- The support address is help@quokka.dev.", "content": "x" * 10}
    out = _reply(
        bounded,
        {"op": "add", "target": "end", "content": cut, "rationale": "a"},
        {"op": "add", "target": "end", "content": lines, "rationale": "b"},
        {"op": "add", "target": "end", "content": url, "rationale": "c"},
        {"op": "add", "target": "end", "content": comma, "rationale": "e"},
        {**kept, "rationale": "d"},
    )
    assert [e["content"] for e in out["edits"]] == [
        "The support address for customers is",
        "Name the on-call channel",
        comma,
        "x" * 10,
    ]
    # the edits left apply, and the skill never holds a word cut in two
    doc, outcomes = SkillDoc(SKILL).apply(parse_patch(out, 1, 1, 4).edits)
    assert [o.status for o in outcomes] == ["applied"] * 4
    assert "is hel" not in doc.text and "https://" not in doc.text


def test_enumerated_strings_and_non_json_replies_are_left_alone() -> None:
    bounded = _bounded(10)
    target = "- The support address is help@quokka.dev."  # longer than the bound: an enum, never cut
    edit = {"op": "replace", "target": target, "content": "Say it.", "rationale": "r"}
    assert _reply(bounded, edit)["edits"] == [edit]
    assert whole_sentences("not json", bounded) == "not json"
    assert whole_sentences("[1, 2]", bounded) == "[1, 2]"


class Recording:
    """The real runtime, each decoded reply kept as it came from the model."""

    def __init__(self, runtime: Any) -> None:
        self.runtime, self.decoded = runtime, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runtime, name)

    def chat(self, request: dict[str, Any]) -> Any:
        text, usage, stats = self.runtime.chat(request)
        self.decoded.append(text)
        return text, usage, stats


def test_the_packaged_model_under_a_tight_bound_writes_no_word_cut_in_half() -> None:
    """The real model, its analyst reply bounded to 75 characters a string: what it decoded stops
    mid-word at the bound; what the backend returns ends that rule at a whole word."""
    pull_default_model()
    cfg = load_config(None, ["model.backend=local", "model.local_ctx=2048", "model.max_output_tokens=96"])
    chat = make_chat(cfg, "optimizer")
    assert isinstance(chat, local.LocalChat)
    recording = Recording(chat.runtime)
    chat.runtime = recording  # type: ignore[assignment]
    schema = patch_schema(SKILL, 1)
    bounded = local.bounded_schema(schema, chat.max_tokens)
    bound = bounded["properties"]["edits"]["items"]["anyOf"][0]["properties"]["content"]["maxLength"]
    ask = (
        "The agent answered 'ask support' but the expected answer named help@quokka.dev and the "
        "staging host stage7.quokka.dev. Propose one long rule for the skill, at least three sentences."
    )
    reply = chat.complete([Message("user", ask)], schema=schema, stage="reflect")
    assert reply.data is not None and len(recording.decoded) == 1
    jsonschema.validate(reply.data, schema)
    raw = [e["content"] for e in json.loads(recording.decoded[0])["edits"]]
    returned = [e["content"] for e in reply.data["edits"]]
    assert raw and len(raw[0]) == bound and not SENTENCE_END.search(raw[0]), raw  # the bound cut it
    assert not raw[0].endswith((" ", ",", ".")), raw  # ... inside a word
    assert len(returned) == len(raw) and returned[0] != raw[0], (raw, returned)
    # what came back is the decoded rule up to a whole word: the next decoded character is a space
    assert raw[0].startswith(returned[0]) and returned[0].strip()
    assert raw[0][len(returned[0]) :][:1].isspace(), (raw, returned)
