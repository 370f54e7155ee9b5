"""The reflection workspace (`optimizer.reflection: workspace`): a read-only folder per analyst
call holding its minibatch in full (every rollout's numbered, uncapped trace, its raw transcript,
the task, answers and score), the skill and the rejected edits. The prompt stays an index: its
budgeted trace views point into the folder, and a harness optimizer (Claude Code, Codex) opens
what it needs with read-only tools before it proposes.

- `fulltrace`: trace_full.txt and where each step's lines are (the views' gap pointers);
- `workspace_files`: the folder's files, built from an analyst's inputs (pure);
- `opened`: the analyst's tool calls -> the files and line ranges it read (the record, the report);
- `reflection_workspace`: the reflection call path in a workspace (folder, guide, bounded session, record);
- `mode`: digest or workspace, the one decision.
"""
