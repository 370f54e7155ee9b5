"""The public Python API, exported from `skillgrad` (docs/api.md): `run` (train, evaluate),
`inputs` (what they accept), `results`, `skill`, `events` (progress for callables) and `scope`
(the process left as it was found)."""
