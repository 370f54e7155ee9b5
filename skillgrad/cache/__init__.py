"""Content-addressed call cache on disk, and the two role wrappers that use it.

Key: sha256 of the canonical JSON of the request (sorted keys, no whitespace, UTF-8) and
`CACHE_VERSION`:
- chat:  backend, model, messages, schema, effort, the settings of `keys.chat_settings` (the
  model's identity: a local file by path, size and mtime with its context size and threads, a
  harness CLI by its version; temperature, output tokens, base URL; a digest of the templates the
  backend adds), salt;
- agent: backend, model, the settings of `keys.rollout_settings` (those of a chat call, the agent
  settings of its spec's `cache_keys`, a digest of the templates rendered around the skill and the
  task), skill text, task content (id, question, context, answers, meta), a digest of the
  workspace as prepared before the run, salt;
- investigate (an analyst reading a reflection workspace): the chat key of its request, a digest of
  the folder's files (paths and contents) and its turn bound; its tool calls are stored with the
  reply, so a replay shows what it opened.
The `stage` label is not part of a chat key: the same request is the same call wherever it is made.
`salt` is for deliberate resampling (a `rollout_id`): equal salts replay, different salts re-ask.

Value: one JSON file per key under `root/ab/cd/<key>.json` holding the key, a sha256 of the
canonical payload, and the payload. An entry that is unreadable, truncated, for another key or
whose checksum does not match is ignored (a miss) and removed; it never raises.

Usage of cache hits (the counting contract, see also `skillgrad.budget`; `on_paid` reports each
call that did reach the model the moment it returns, for the run's `PaidJournal`):
- A hit returns `CachedReply` / `CachedAgentResult` (subclasses of `Reply` / `AgentResult`) whose
  `usage` is ZERO (nothing was paid) and whose `saved` is the stored usage of the original call
  (None on every reply that did reach the model). Code that sums `usage` therefore counts exactly
  the paid calls, and the loop reads `saved` without knowing the cache.
- Each wrapper also keeps thread-safe `stats` (hits, misses, saved usage, uncacheable).
- Failures are never cached: an exception from `ChatModel.complete` propagates, and an
  `AgentResult` with `is_error=True` is returned unstored, so a crashed task is retried on resume.

Workspaces: agentic benchmarks score the files an agent left behind, so a cached agent result is
only valid with them. `CachedAgent(snapshot_workspace=True)` (the default) stores the workspace's
regular files (up to `max_workspace_bytes`, judged from their sizes before any read; a larger
workspace is simply not cached), each passed through `redact_file` (the run's secret redaction: an
agent may have written `env` into a file), and restores them on a hit. Pass False for benchmarks
scored from the answer alone to save disk.

Writes are atomic (temp + rename) without fsync: a SIGKILL cannot lose page-cache data, and an
entry torn by a power loss fails its checksum and is re-asked. Identical requests issued
concurrently are serialised per key (`CallCache.claim`), so the second one is a hit, not a payment.
"""

from skillgrad.cache.agent import CachedAgent, CachedAgentResult
from skillgrad.cache.chat import CachedChatModel, CachedReply, saved_usage
from skillgrad.cache.store import CacheStats, CallCache, canonical_json, request_key

__all__ = [
    "CacheStats",
    "CachedAgent",
    "CachedAgentResult",
    "CachedChatModel",
    "CachedReply",
    "CallCache",
    "canonical_json",
    "request_key",
    "saved_usage",
]
