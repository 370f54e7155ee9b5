"""Training when a skill is used: the description that makes a harness load it.

Claude Code and Codex see a skill's `name` and `description` (its front matter) until they decide
to load it; the body is read after. This package measures that decision and trains the
description (`optimizer.target: description | both`):

- `triggers`: the queries that should and should not load the skill, split train / val / test;
  the trigger benchmark that scores a run by whether the skill was loaded.
- `distractors`: the other skills installed beside it (shipped ones, or a folder of yours).
- `detect`: which skills a session loaded, from its trace steps.
- `agents`: the target with the skill installed among the distractors and not named (a harness),
  or a chat model that routes a query to one skill or none.
- `description`: the front matter as text: read, replace, the Agent Skills limits.
- `metrics`: trigger rate per query, precision / recall / F1, and the gate that keeps a
  description only when held-out F1 rises under the paired test.
- `analyst`: the prompt that rewrites the description from the failed and wrong triggers.
- `world`: those parts put together as the trainer's benchmark, roles and strategies.
- `both`: description steps beside body steps in one run.
"""
