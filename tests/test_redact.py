"""Secret redaction by value: config, environment, headers, echoes inside transcripts."""

from __future__ import annotations

import json

from skillgrad.config import Config
from skillgrad.redact import REDACTED, Redactor

CFG_KEY = "sk-cfg-0123456789abcdef"
ENV_KEY = "sk-ant-env-9876543210"
ODD_KEY = 'pa"ss\\word/with€x'


def make_config() -> Config:
    return Config.model_validate(
        {
            "model": {"api_key": CFG_KEY, "optimizer_api_key": "tiny"},
            "benchmark": {"options": {"db_password": "hunter2-but-longer", "note": "plain-note-value"}},
        }
    )


def test_config_secretstr_and_secret_named_keys() -> None:
    red = Redactor.from_config(make_config(), {})
    text = f"key={CFG_KEY} pw=hunter2-but-longer note=plain-note-value tiny"
    out = red.redact(text)
    assert CFG_KEY not in out and "hunter2-but-longer" not in out
    assert "plain-note-value" in out  # not under a secret-named key
    assert "tiny" in out  # shorter than the minimum: never redacted
    assert red.count == 2


def test_environment_credentials() -> None:
    env = {
        "ANTHROPIC_API_KEY": ENV_KEY,
        "MY_SERVICE_TOKEN": "tok-abcdefgh1234",
        "DB_PASSWORD_FILE_X": "pw-abcdefgh1234",
        "HOME": "/home/someone-long",
        "TOKENIZERS_PARALLELISM": "false-but-long",
    }
    red = Redactor.from_config(make_config(), env)
    out = red.redact(f"{ENV_KEY} tok-abcdefgh1234 pw-abcdefgh1234 /home/someone-long false-but-long")
    assert out.split() == [REDACTED, REDACTED, REDACTED, "/home/someone-long", "false-but-long"]


def test_authorization_headers_without_known_values() -> None:
    red = Redactor([])
    text = (
        "Authorization: Bearer abc.DEF-123_xyz\n"
        "x-api-key: sk-unknown-777\n"
        '{"authorization": "Bearer zzz999yyy", "X-Api-Key": "k-888888888"}'
    )
    out = red.redact(text)
    for leaked in ("abc.DEF-123_xyz", "sk-unknown-777", "zzz999yyy", "k-888888888"):
        assert leaked not in out
    assert "Authorization: Bearer [REDACTED]" in out
    assert json.loads(out.splitlines()[2])["authorization"] == f"Bearer {REDACTED}"


def test_key_echoed_inside_json_transcript() -> None:
    red = Redactor.from_config(make_config(), {"OPENAI_API_KEY": ENV_KEY})
    transcript = [
        {"type": "tool_result", "content": [{"type": "text", "text": f"env shows OPENAI_API_KEY={ENV_KEY}"}]},
        {"type": "assistant", "text": f"I found {CFG_KEY}", CFG_KEY: "as a key"},
    ]
    out = red.redact_json(transcript)
    dumped = json.dumps(out)
    assert ENV_KEY not in dumped and CFG_KEY not in dumped
    assert out[0]["content"][0]["text"] == f"env shows OPENAI_API_KEY={REDACTED}"
    assert red.redact(json.dumps(transcript)) == json.dumps(out)


def test_json_escaped_form() -> None:
    red = Redactor([ODD_KEY])
    escaped = json.dumps({"k": ODD_KEY})  # quotes, backslash and non-ASCII become escapes
    assert ODD_KEY not in escaped
    out = red.redact(escaped)
    assert "word" not in out and json.loads(out) == {"k": REDACTED}
    assert red.redact(json.dumps({"k": ODD_KEY}, ensure_ascii=False)) == json.dumps(
        {"k": REDACTED}, ensure_ascii=False
    )


def test_longer_secret_wins_and_plain_text_untouched() -> None:
    red = Redactor(["abcdefgh", "abcdefgh-longer"])
    assert red.redact("x abcdefgh-longer y") == f"x {REDACTED} y"
    assert red.redact("nothing secret here") == "nothing secret here"
    assert red("") == ""
