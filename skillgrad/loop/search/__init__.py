"""Search strategies: how a run walks the space of skills (`optimizer.search`).

`greedy` keeps one incumbent that a candidate replaces when it passes the gate. `frontier` keeps a
pool of candidates with their per-item validation scores, picks each step's parent from the
members no other member dominates item by item, and merges lineages with complementary wins. Both
answer the trainer through one protocol (`protocol.Search`), chosen by name in `loop.strategies`.
"""
