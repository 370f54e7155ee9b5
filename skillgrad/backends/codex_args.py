"""The command line and environment of one `codex exec` session: pure functions of the config
(plus the private homes they point to), kept apart from running the CLI and reading its events.

- Environment: minimal (PATH, locale, proxies, certificates), a private HOME and CODEX_HOME, and
  the API key under KEY_VAR only, the variable the provider's `env_key` names. The agent's own
  commands never see the key (`shell_environment_policy.exclude`).
- Endpoint: the OpenAI-compatible provider `skillgrad`, defined with `-c model_providers...`:
  `model.base_url` (default api.openai.com) and the Responses wire API, the only one the pinned CLI
  speaks. A reused login with no key and no base_url keeps the CLI's own OpenAI provider.
- Isolation flags: no user config, rules, session files, bundled skills or analytics, and
  `project_root_markers=[]`, so nothing of the folders around the workspace is read.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.values import Effort, Role

KEY_VAR = "SKILLGRAD_CODEX_API_KEY"
PROVIDER = "skillgrad"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PASSTHROUGH = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
)
# Tools the optimizer must not have: the shell, and the optional ones the CLI lets us switch off.
OPTIMIZER_OFF = ("shell_tool", "unified_exec", "goals", "multi_agent", "view_image", "image_generation")


def toml_str(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (non-ASCII kept literal, no surrogates)."""
    return json.dumps(value, ensure_ascii=False)


def api_key(cfg: Config, role: Role) -> str | None:
    return cfg.model.api_key_for(role) or os.environ.get("OPENAI_API_KEY") or None


def user_codex_home() -> Path:
    """Where the user's own Codex login lives (only read with model.codex_reuse_login)."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def private_home(cfg: Config, root: Path) -> dict[str, str]:
    """A fresh HOME and CODEX_HOME under `root`; the login copied in only when asked."""
    codex_home = root / "codex_home"
    codex_home.mkdir(parents=True)
    (root / "home").mkdir()
    if cfg.model.codex_reuse_login:
        auth = user_codex_home() / "auth.json"
        if auth.is_file():
            shutil.copy2(auth, codex_home / "auth.json")
    return {"HOME": str(root / "home"), "CODEX_HOME": str(codex_home)}


def cli_env(cfg: Config, role: Role, root: Path) -> dict[str, str]:
    """The child's whole environment: minimal, private homes, the key under KEY_VAR."""
    env = {k: os.environ[k] for k in PASSTHROUGH if k in os.environ}
    env.update(private_home(cfg, root))
    key = api_key(cfg, role)
    if key:
        env[KEY_VAR] = key
    return env


def provider_args(cfg: Config, role: Role) -> list[str]:
    """`-c` overrides defining the endpoint; none when a reused login talks to OpenAI itself."""
    base_url = cfg.model.base_url_for(role)
    keyed = api_key(cfg, role) is not None
    if not base_url and not keyed and cfg.model.codex_reuse_login:
        return []
    prefix = f"model_providers.{PROVIDER}"
    retries = str(cfg.model.max_retries)
    args = [
        f"model_provider={toml_str(PROVIDER)}",
        f"{prefix}.name={toml_str(PROVIDER)}",
        f"{prefix}.base_url={toml_str(base_url or DEFAULT_BASE_URL)}",
        f'{prefix}.wire_api="responses"',
        f"{prefix}.request_max_retries={retries}",
        f"{prefix}.stream_max_retries={retries}",
    ]
    if keyed:
        args.append(f"{prefix}.env_key={toml_str(KEY_VAR)}")
    return [part for arg in args for part in ("-c", arg)]


def base_argv(cli: str, cfg: Config, role: Role, cwd: Path, sandbox: str, effort: Effort | None) -> list[str]:
    argv = [cli, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--ignore-user-config"]
    argv += ["--ignore-rules", "--cd", str(cwd), "--sandbox", sandbox]
    overrides = [
        f"approval_policy={toml_str(cfg.model.codex_approval_policy)}",
        "project_root_markers=[]",
        "skills.bundled.enabled=false",
        "check_for_update_on_startup=false",
        "analytics.enabled=false",
        # The key is for the CLI's own requests, never for the commands the agent runs.
        f"shell_environment_policy.exclude=[{toml_str(KEY_VAR)}]",
    ]
    if effort:
        overrides.append(f"model_reasoning_effort={toml_str(effort)}")
    argv += [part for arg in overrides for part in ("-c", arg)]
    argv += provider_args(cfg, role)
    model = cfg.model.model_for(role)
    return argv + (["--model", model] if model else [])


def optimizer_args() -> list[str]:
    """Flags that take the shell and the optional tools away from an optimizer session."""
    args = [part for feature in OPTIMIZER_OFF for part in ("--disable", feature)]
    return args + ["-c", 'web_search="disabled"']


def strict_schema(schema: Any) -> Any:
    """The schema as the CLI sends it (`strict: true`): every object closed, every property
    required. Our schemas already require what they list; this only closes them."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict_schema(v) for k, v in schema.items()}
    if out.get("type") == "object" and isinstance(out.get("properties"), dict):
        out.setdefault("additionalProperties", False)
        out["required"] = list(out["properties"])
    return out


def reader_args() -> list[str]:
    """Flags of an optimizer session that reads a workspace: the shell stays (its only way to
    read, under the read-only sandbox, which also refuses `apply_patch` and cuts the network);
    the optional tools go."""
    shell = ("shell_tool", "unified_exec")
    args = [part for feature in OPTIMIZER_OFF if feature not in shell for part in ("--disable", feature)]
    return args + ["-c", 'web_search="disabled"']
