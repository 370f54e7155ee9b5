"""The frontier search's parts: dominance, the parent rules (seeded), the pool-entry gate, the
three-way merge (clean, conflicting, skipped), the analyst's resolution and the pool in state.json."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from skillgrad.budget import Ledger
from skillgrad.cache.keys import resamples
from skillgrad.config import Config
from skillgrad.errors import StructuredOutputError
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.checks import CandidateChecks
from skillgrad.loop.decision.gate import make_gate
from skillgrad.loop.decision.pool_entry import EntryGate
from skillgrad.loop.decision.racing import Race, validate
from skillgrad.loop.event_bus import Events
from skillgrad.loop.search.dominance import Scored, dominates, frontier
from skillgrad.loop.search.frontier import FrontierSearch
from skillgrad.loop.search.lineage_merge import merge_pair
from skillgrad.loop.search.parents import PARENTS, item_weights, parent_rng
from skillgrad.loop.search.pool import Member, Pool, read_state
from skillgrad.loop.search.protocol import SearchContext
from skillgrad.loop.search.resolve import Side, parse_resolutions, resolve
from skillgrad.loop.search.threeway import Conflict, merge_skills
from skillgrad.loop.state import StateError, TrainState
from skillgrad.loop.strategies import Strategies, search_settings
from skillgrad.package.model import SkillPackage, as_package
from skillgrad.report.candidate_tree import search_view
from skillgrad.report.data import load_run
from skillgrad.run_folder import RunDir
from skillgrad.session.projection import Assumptions, estimate
from skillgrad.skilldoc import Edit, SkillDoc
from skillgrad.values import AgentResult, Reply, Rollout, Score, Task, Usage


def scored(version: int, chars: int = 10, **means: float) -> Scored:
    return Scored(version, means, chars)


# -- dominance ------------------------------------------------------------------------------------
def test_dominance_is_item_by_item_and_a_tie_keeps_the_smaller_skill() -> None:
    a, b = scored(1, a=1, b=0), scored(2, a=0, b=1)
    assert not dominates(a, b) and not dominates(b, a)  # each wins an item
    better = scored(3, a=1, b=1)
    assert dominates(better, a) and dominates(better, b) and not dominates(a, better)
    # a higher mean is not dominance: c wins item b over d, d wins item a
    c, d = scored(4, a=0.2, b=1.0), scored(5, a=0.3, b=0.0)
    assert not dominates(c, d)
    # tied on every item: the smaller skill dominates, and of equal size the earlier one
    small, big = scored(6, chars=5, a=1, b=0), scored(7, chars=50, a=1, b=0)
    assert dominates(small, big) and not dominates(big, small)
    twin = scored(8, chars=5, a=1, b=0)
    assert dominates(small, twin) and not dominates(twin, small)
    assert [m.version for m in frontier([a, b, big, small, twin])] == [2, 6]


# -- parents --------------------------------------------------------------------------------------
FRONT = [scored(0, a=1, b=0, c=0, d=0), scored(1, a=0, b=1, c=1, d=0), scored(2, a=0, b=0, c=1, d=0)]


def draws(rule: str, seed: int, n: int = 400) -> dict[int, int]:
    counts: dict[int, int] = {}
    for step in range(n):
        pick = PARENTS[rule](FRONT, parent_rng(seed, step)).version
        counts[pick] = counts.get(pick, 0) + 1
    return counts


def test_parent_rules_are_seeded_and_follow_their_definition() -> None:
    for rule in PARENTS:  # the same seed and step draw the same parent, whatever ran before
        assert draws(rule, 7, 50) == draws(rule, 7, 50)
    # best: the highest mean (v1), on a tie the smaller and then the earlier member
    assert PARENTS["best"](FRONT, random.Random(0)).version == 1
    tied = [scored(5, chars=30, a=1), scored(4, chars=30, a=1), scored(6, chars=9, a=1)]
    assert PARENTS["best"](tied, random.Random(0)).version == 6
    # pareto: a win alone counts 1, one shared by k members 1/k; item d (all tie) counts for none
    assert item_weights(FRONT) == {0: 1.0, 1: 1.5, 2: 0.5}
    counts = draws("pareto", 3)
    assert counts[1] > counts[0] > counts[2] > 0
    assert abs(counts[1] / 400 - 1.5 / 3) < 0.08
    # lexicase: v0 is drawn when item a comes first of a, b, c (a third of the orders), v1
    # otherwise; v2 shares its only top score (item c) with v1, which also tops b: never alone
    counts = draws("lexicase", 3)
    assert set(counts) == {0, 1} and abs(counts[0] / 400 - 1 / 3) < 0.08
    # a member that wins no item is never drawn by pareto, and by lexicase only on a full tie
    loser = scored(9, a=0, b=0, c=0, d=0)
    assert all(PARENTS["pareto"]([*FRONT, loser], parent_rng(1, s)).version != 9 for s in range(200))
    assert all(PARENTS["lexicase"]([*FRONT, loser], parent_rng(1, s)).version != 9 for s in range(200))


# -- the pool-entry gate --------------------------------------------------------------------------
POOL = [scored(0, chars=0, a=0, b=1, c=1, d=0)]  # the parent (version 0) is the only member


def test_entry_needs_a_won_item_and_no_dominating_member() -> None:
    gate = EntryGate(make_gate("strict", 0.05), POOL, chars=20)
    parent = {"a": [0.0], "b": [1.0], "c": [1.0], "d": [0.0]}
    # wins a and d, loses b: the mean rises by one item's worth, as the strict gate asks
    child = {"a": [1.0], "b": [0.0], "c": [1.0], "d": [1.0]}
    decision = gate.decide(child, parent)
    assert decision.accepted and decision.effect == 0.25 and "wins 2 item(s)" in decision.reason
    assert decision.test == "pool entry: strict mean on every item"
    # the strict gate has no level to spend on a trade-off: wins a and d, loses b and c, is out
    trade = gate.decide({"a": [1.0], "b": [0.0], "c": [0.0], "d": [1.0]}, parent)
    assert not trade.accepted and "does not pass the gate on every item" in trade.reason
    # no item won: out, whatever it ties
    assert not gate.decide(parent, parent).accepted
    assert "wins no val item" in gate.decide({**parent, "b": [0.0]}, parent).reason
    # dominated by another member (a sibling that wins the same items and more)
    rich = EntryGate(make_gate("strict", 0.05), [*POOL, scored(3, a=1, b=1, c=1, d=1)], chars=20)
    refused = rich.decide(child, parent)
    assert not refused.accepted and "v0003 dominates it" in refused.reason


def test_entry_with_the_paired_gate_tests_every_item() -> None:
    zero, one = [0.0] * 3, [1.0] * 3
    gate = EntryGate(make_gate("paired", 0.05), [scored(0, chars=0, a=0, b=1, c=1)], chars=20)
    parent = {"a": zero, "b": one, "c": one}
    # no net effect: wins a 3/3 and loses b 3/3. On a alone p would be 1/20; on every item one of
    # the two items swept either way is what noise gives 9.75 % of the time: not a test passed
    swap = gate.decide({"a": one, "b": zero, "c": one}, parent)
    assert not swap.accepted and swap.p_value == pytest.approx(0.0975)
    assert "does not pass the gate on every item" in swap.reason
    noisy = gate.decide({"a": [1.0, 0.0, 0.0], "b": one, "c": one}, parent)
    assert not noisy.accepted and "wins 1 item(s)" in noisy.reason
    # a trade-off with real wins: two items swept for two lost keeps the mean, and the greedy
    # paired gate (the mean must rise) rejects it, but p = 0.014 on every item: it enters the pool
    pool = [scored(0, chars=0, a=0, b=0, c=1, d=1)]
    before = {"a": zero, "b": zero, "c": one, "d": one}
    after = {"a": one, "b": one, "c": zero, "d": zero}
    assert not make_gate("paired", 0.05).decide(after, before).accepted
    kept = EntryGate(make_gate("paired", 0.05), pool, chars=20).decide(after, before)
    assert kept.accepted and kept.effect == 0 and kept.p_value == pytest.approx(0.014, abs=1e-3)


def test_racing_against_the_parent_stops_a_child_that_can_no_longer_enter() -> None:
    tasks = [Task(id=i, question=i, answers=["x"]) for i in ("a", "b", "c", "d", "e", "f")]
    parent = {"a": [0.0], "b": [1.0], "c": [1.0], "d": [1.0], "e": [1.0], "f": [1.0]}
    gate = EntryGate(
        make_gate("strict", 0.05), [scored(0, chars=0, **{k: v[0] for k, v in parent.items()})], 5
    )
    ran: list[str] = []

    def run(units: Any, outcome: float) -> list[Rollout]:
        ran.extend(u.task.id for u in units)
        return [Rollout(u.task, AgentResult("x"), Score(outcome, outcome == 1.0, "")) for u in units]

    failing = validate(tasks, 1, {}, lambda units: run(units, 0.0), Race(gate, parent, 2))
    assert failing.raced_out and ran == ["a"]  # the only item it could win, first: lost, out
    ran.clear()
    winning = validate(tasks, 1, {}, lambda units: run(units, 1.0), Race(gate, parent, 2))
    assert not winning.raced_out and sorted(ran) == sorted(parent)
    assert gate.decide(winning.results, parent).accepted


# -- the three-way merge --------------------------------------------------------------------------
BASE = "# Skill\n\n- rule one\n- rule two\n- rule three\n"


def test_three_way_merge_clean() -> None:
    ours = "# Skill\n\n- rule one, sharper\n- rule two\n- rule three\n"
    theirs = "# Skill\n\n- rule one\n- rule two\n- rule three\n- rule four\n"
    merged = merge_skills(BASE, ours, theirs)
    assert not merged.conflicts
    assert merged.text() == "# Skill\n\n- rule one, sharper\n- rule two\n- rule three\n- rule four\n"
    # both lineages append rules at the end: both kept, a rule both added once
    a = BASE + "- answer in French\n- cite the source\n"
    b = BASE + "- cite the source\n- use metric units\n"
    both = merge_skills(BASE, a, b)
    assert not both.conflicts
    assert both.text() == BASE + "- answer in French\n- cite the source\n- use metric units\n"
    # the same change on both sides is no conflict
    assert merge_skills(BASE, ours, ours).text() == ours


def test_three_way_merge_conflicting_lines_are_resolved_in_order() -> None:
    ours = "# Skill\n\n- rule one, in bold\n- rule two\n- rule three\n"
    theirs = "# Skill\n\n- rule one, in italics\n- rule two\n- rule three!\n"
    merged = merge_skills(BASE, ours, theirs)
    assert merged.conflicts == [
        Conflict("SKILL.md", ["- rule one\n"], ["- rule one, in bold\n"], ["- rule one, in italics\n"])
    ]
    text = merged.text([["- rule one, in bold italics\n"]])
    assert text == "# Skill\n\n- rule one, in bold italics\n- rule two\n- rule three!\n"
    # one side deletes the line the other rewrites: a conflict too
    deleted = merge_skills(BASE, "# Skill\n\n- rule two\n- rule three\n", ours)
    assert len(deleted.conflicts) == 1 and deleted.conflicts[0].ours == []


def test_three_way_merge_of_packages_file_by_file() -> None:
    base = SkillPackage({"SKILL.md": BASE, "ref.md": "a\nb\n"}).encode()
    ours = SkillPackage(
        {"SKILL.md": BASE + "- see ref.md\n", "ref.md": "a\nb\n", "new.py": "print(1)\n"}
    ).encode()
    theirs = SkillPackage({"SKILL.md": BASE, "ref.md": "a\nb, detailed\n"}).encode()
    merged = merge_skills(base, ours, theirs)
    assert not merged.conflicts
    package = as_package(merged.text())
    assert package is not None
    assert package.files == {
        "SKILL.md": BASE + "- see ref.md\n",
        "ref.md": "a\nb, detailed\n",
        "new.py": "print(1)\n",
    }
    with pytest.raises(ValueError, match="not all packages"):
        merge_skills(base, BASE, theirs)


# -- the analyst's resolution ---------------------------------------------------------------------
class ScriptedChat:
    name, model = "scripted", "scripted"

    def __init__(self, reply: dict[str, Any] | Exception) -> None:
        self.reply = reply
        self.calls: list[Any] = []

    def complete(self, messages, *, schema=None, effort=None, stage=""):
        self.calls.append((messages, schema, stage))
        if isinstance(self.reply, Exception):
            raise self.reply
        return Reply(text="{}", data=self.reply, usage=Usage(100, 20, 1, None))


CONFLICT = [Conflict("SKILL.md", ["- rule one\n"], ["- bold\n"], ["- italics\n"])]
SIDES = (Side("v0001", 0.5, 1, [Edit("replace", "- rule one", "- bold")]), Side("v0002", 0.4, 2, []))


def test_resolve_makes_one_paid_call_and_skips_with_a_reason() -> None:
    accounting = Accounting(Ledger())
    chat = ScriptedChat({"resolutions": [{"conflict": 1, "lines": "- bold\n- italics"}], "skip_reason": ""})
    done = resolve(chat, CONFLICT, SIDES, None, accounting)
    assert done.lines == [["- bold\n", "- italics\n"]] and len(chat.calls) == 1
    messages, schema, stage = chat.calls[0]
    assert stage == "merge" and schema["properties"]["resolutions"]["maxItems"] == 1
    assert "- rule one" in messages[1].content and "v0002" in messages[1].content
    assert accounting.usage_so_far()["optimizer"]["calls"] == 1
    declined = resolve(
        ScriptedChat({"resolutions": [], "skip_reason": "they contradict"}), CONFLICT, SIDES, None, accounting
    )
    assert declined.lines is None and "they contradict" in declined.reason
    assert parse_resolutions({"resolutions": [], "skip_reason": ""}, 2) == (
        None,
        "the analyst resolved 0 of 2 conflicts",
    )
    both = {"resolutions": [{"conflict": 1, "lines": "- bold"}], "skip_reason": "none"}
    assert parse_resolutions(both, 1) == ([["- bold\n"]], "")  # a resolution of every conflict stands
    marked = {"resolutions": [{"conflict": 1, "lines": "<!-- protected -->x"}], "skip_reason": ""}
    assert parse_resolutions(marked, 1)[0] is None
    failed = resolve(
        ScriptedChat(StructuredOutputError("scripted", "merge", "??", "no JSON")),
        CONFLICT,
        SIDES,
        None,
        accounting,
    )
    assert failed.lines is None and "failed" in failed.reason and "error" in failed.record


# -- the pool in state.json, lineage merges and rejects ---------------------------------------------
def member(version: int, parents: list[int], text: str, **items: float) -> Member:
    return Member(
        version=version, parents=parents, step=version, text=text, results={k: [v] for k, v in items.items()}
    )


def test_pool_round_trips_through_state_json_and_refuses_what_does_not_hold_together() -> None:
    pool = Pool(members=[member(0, [], "", a=0, b=1), member(1, [0], "R\n", a=1, b=0)])
    pool.member(0).reject(1, [Edit("add", "end", "bad rule")])
    state = TrainState(step=1, version=1, accepted=1, current_text="R\n", pool=pool)
    again = read_state(state.to_json())
    assert again.pool == pool and again.to_json() == state.to_json()
    assert "pool" not in TrainState().to_json()  # a greedy run's state.json is as before
    data = pool.to_json()
    with pytest.raises(StateError, match="no strategy to read it"):  # the state holds no frontier model
        TrainState.from_json(state.to_json())
    orphan = {**data, "members": [data["members"][0], {**data["members"][1], "parents": [5]}]}
    with pytest.raises(StateError, match=r"^pool: Value error, member v1: parent v5"):  # located as before
        read_state({**state.to_json(), "pool": orphan})
    for broken, message in (
        ({**data, "members": [data["members"][1]]}, "no parents"),
        (
            {**data, "members": [data["members"][0], {**data["members"][1], "parents": [5]}]},
            "not an earlier member",
        ),
        (
            {**data, "members": [data["members"][0], {**data["members"][1], "results": {"a": [1.0]}}]},
            "val items",
        ),
        (
            {**data, "members": [{**data["members"][0], "edits": [{"op": "explode"}]}, data["members"][1]]},
            "unknown edit op",
        ),
    ):
        with pytest.raises(ValidationError, match=message):
            Pool.from_json(broken)


def test_rejected_edits_stay_in_their_lineage() -> None:
    pool = Pool(
        members=[
            member(0, [], "", a=0, b=0),
            member(1, [0], "A\n", a=1, b=0),
            member(2, [0], "B\n", a=0, b=1),
        ]
    )
    pool.member(1).reject(1, [Edit("add", "end", "tried on A")])
    pool.member(0).reject(1, [Edit("add", "end", "tried on the root")])
    assert [e.content for e in pool.lineage_rejects(1, 1)] == ["tried on the root", "tried on A"]
    assert [e.content for e in pool.lineage_rejects(2, 1)] == ["tried on the root"]
    assert pool.lineage_rejects(1, 2) == []  # a new epoch starts afresh
    pair = merge_pair(pool)
    assert pair is not None and (pair.ours.version, pair.theirs.version, pair.ancestor.version) == (1, 2, 0)


def frontier_search(tmp_path: Path, chat: ScriptedChat | None, **opt: Any) -> FrontierSearch:
    cfg = Config()
    cfg.optimizer.search, cfg.optimizer.merge_every = "frontier", 2
    for key, value in opt.items():
        setattr(cfg.optimizer, key, value)
    run = RunDir(tmp_path / "run")
    run.create()
    gate = make_gate(cfg.optimizer.gate, cfg.optimizer.gate_alpha)
    checks = CandidateChecks(None, 10)
    settings = search_settings(cfg, Strategies.from_config(cfg.optimizer), resamples(cfg))
    return FrontierSearch(SearchContext(settings, gate, run, Events(), Accounting(Ledger()), chat, checks))


def conflicting_state() -> TrainState:
    base = "- rule one\n- rule two\n"
    pool = Pool(
        members=[
            member(0, [], base, a=0, b=0),
            member(1, [0], "- rule one, bold\n- rule two\n", a=1, b=0),
            member(2, [0], "- rule one, italics\n- rule two\n", a=0, b=1),
        ]
    )
    return TrainState(current_text=base, version=2, pool=pool)


def test_a_merge_step_validates_the_resolved_merge(tmp_path: Path) -> None:
    chat = ScriptedChat(
        {"resolutions": [{"conflict": 1, "lines": "- rule one, bold italics"}], "skip_reason": ""}
    )
    search, state = frontier_search(tmp_path, chat), conflicting_state()
    search.begin(state, 2, 1)
    assert search.parent == 1 and state.current_text == state.pool.member(1).text  # type: ignore[union-attr]
    proposal = search.merge_lineages(state, 2)
    assert proposal is not None and len(chat.calls) == 1
    candidate, outcomes, blocked = proposal
    assert candidate.text == "- rule one, bold italics\n- rule two\n" and blocked is None
    assert [o.edit.op for o in outcomes] == ["replace"]
    version = search.accept(state, 2, candidate.text, {"a": [1.0], "b": [1.0]}, [o.edit for o in outcomes])
    pool = state.pool
    assert pool is not None and version == "v0003" and pool.member(3).parents == [1, 2]
    assert pool.merges[0].outcome == "accepted" and pool.merges[0].version == 3
    assert [m.version for m in pool.frontier()] == [3] and state.best_version == 3
    assert (tmp_path / "run" / "skills" / "v0003.md").read_text() == candidate.text
    assert (tmp_path / "run" / "best_skill.md").read_text() == candidate.text
    record = (tmp_path / "run" / "steps" / "0002" / "merge.json").read_text()
    assert '"outcome": "validated"' in record and "bold italics" in record


def test_a_skipped_merge_says_why_and_the_step_draws_a_parent(tmp_path: Path) -> None:
    chat = ScriptedChat({"resolutions": [], "skip_reason": "the two rules contradict"})
    search, state = frontier_search(tmp_path, chat), conflicting_state()
    search.begin(state, 2, 1)
    assert search.merge_lineages(state, 2) is None
    pool = state.pool
    assert pool is not None and pool.merges[0].outcome == "skipped"
    assert "contradict" in pool.merges[0].reason
    assert search.pending is None and search.parent in (1, 2)  # drawn by the parent rule instead
    assert merge_pair(pool) is None  # a pair is tried once
    record = (tmp_path / "run" / "steps" / "0002" / "merge.json").read_text()
    assert '"outcome": "skipped"' in record and "contradict" in record
    # a rejected child leaves its edits in its parent's lineage only
    search.begin(state, 3, 1)
    search.reject(state, [Edit("add", "end", "refused rule")])
    other = 2 if search.parent == 1 else 1
    assert pool.lineage_rejects(search.parent, 1) and not pool.lineage_rejects(other, 1)


def test_the_best_is_picked_on_validation_and_must_pass_the_gate_against_the_initial_skill(
    tmp_path: Path,
) -> None:
    search = frontier_search(tmp_path, None, merge_every=0)
    state = TrainState(current_text="", val_results={SkillDoc("").content_hash: {"a": [0.0], "b": [1.0]}})
    search.begin(state, 1, 1)
    search.accept(state, 1, "A\n", {"a": [1.0], "b": [0.0]}, [Edit("add", "end", "A")])
    assert state.best_version == 0  # ties the initial skill on the mean: not better
    search.begin(state, 2, 1)
    search.accept(state, 2, "AB\n", {"a": [1.0], "b": [1.0]}, [Edit("add", "end", "AB")])
    assert (state.best_version, state.best_score, state.best_step) == (2, 1.0, 2)
    assert search.tested(state) == [2] and search.outcome(state)["search"]["frontier"] == ["v0002"]


def test_the_estimate_of_a_frontier_run_spends_no_more_search_calls_than_greedy() -> None:
    tasks = [Task(f"t{i}", f"Question {i}?", None, ("a",)) for i in range(30)]
    splits = {"train": tasks[:12], "val": tasks[12:20], "test": tasks[20:]}
    cfg = Config.model_validate(
        {
            "model": {"backend": "openai_chat"},
            "train": {"epochs": 2, "batch_size": 4, "minibatch_size": 2},
            "optimizer": {"merge_every": 2},
        }
    )
    loop_only = Assumptions(retry_share=0.0)  # the loop's calls, without the assumed retries
    greedy = estimate(cfg, splits, "", loop_only)
    cfg.optimizer.search = "frontier"
    frontier = estimate(cfg, splits, "", loop_only)
    stages = ("baseline", "rollout", "validate")
    assert sum(frontier["by_stage"][s]["calls"] for s in stages) < sum(
        greedy["by_stage"][s]["calls"] for s in stages
    )
    # 6 steps, 3 merge steps, half of them (2) merge: 8 train rollouts and 4 reflections less, one
    # analyst call for conflicts, nothing redone
    assert frontier["assumptions"]["merge_steps"] == 2 and frontier["assumptions"]["rollouts_redone"] == 0
    assert frontier["by_stage"]["rollout"]["calls"] == 2 * 12 - 8
    assert frontier["by_stage"]["reflect"]["calls"] == greedy["by_stage"]["reflect"]["calls"] - 4 == 8
    merge = frontier["by_stage"]["merge"]
    assert merge["calls"] == 1 and merge["input_tokens"] > 300
    # the final test also reports a frontier member beside the initial and the best skill
    assert frontier["by_stage"]["test"]["calls"] == greedy["by_stage"]["test"]["calls"] + 10
    assert (
        frontier["by_role"]["optimizer"]["calls"]
        == frontier["by_stage"]["reflect"]["calls"] + frontier["by_stage"]["merge"]["calls"]
    )


def test_the_report_reads_the_pool_and_skips_a_damaged_one(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"best_version": "v0001"}', encoding="utf-8")
    (tmp_path / "state.json").write_text('{"step": 1}', encoding="utf-8")
    assert search_view(load_run(tmp_path)) is None  # a greedy run: no section
    pool = Pool(members=[member(0, [], "", a=0, b=1), member(1, [0], "R\n", a=1, b=0)])
    (tmp_path / "state.json").write_text(json.dumps({"pool": pool.to_json()}), encoding="utf-8")
    view = search_view(load_run(tmp_path))
    assert view is not None and view.columns == ["v0000", "v0001"] and view.frontier == ["v0000", "v0001"]
    assert [c.version for c in view.tree.children] == ["v0001"] and view.tree.children[0].best
    assert [r.cells for r in view.rows] == [[(0.0, ""), (1.0, "sole")], [(1.0, "sole"), (0.0, "")]]
    assert view.sole_wins == [1, 1]
    broken = pool.to_json()
    broken["members"][1]["parents"] = [7]
    (tmp_path / "state.json").write_text(json.dumps({"pool": broken}), encoding="utf-8")
    run = load_run(tmp_path)
    assert search_view(run) is None  # the section is left out, the rest of the report renders
    [warning] = run.warnings
    assert warning == (
        f"{tmp_path / 'state.json'}: pool: Value error, member v1: parent v7 is not an earlier member; "
        "skipped in the report"
    )
    (tmp_path / "state.json").write_text('{"pool": {"members": [', encoding="utf-8")
    run = load_run(tmp_path)
    assert search_view(run) is None and "not valid UTF-8 JSON" in run.warnings[0]
