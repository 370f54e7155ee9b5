from skillgrad.loop.patch_merge import Patch, UnionMerge
from skillgrad.loop.selection import SupportRank, clip, constant, cosine, linear
from skillgrad.skilldoc import Edit


def test_schedules_start_high_end_low():
    assert [constant(s, 5, 4, 1) for s in range(1, 6)] == [4] * 5
    assert [linear(s, 4, 4, 1) for s in range(1, 5)] == [4, 3, 2, 1]
    values = [cosine(s, 5, 4, 1) for s in range(1, 6)]
    assert values[0] == 4 and values[-1] == 1 and values == sorted(values, reverse=True)
    assert cosine(1, 1, 4, 2) == 4  # a single step uses the full rate


def test_merge_counts_support_and_resolves_conflicts():
    a = Edit("add", "", "Dates as YYYY-MM-DD.")
    a_again = Edit("add", "", "dates as  YYYY-MM-DD.")
    r1 = Edit("replace", "Be brief.", "One line.")
    r2 = Edit("replace", "be brief.", "Two lines.")
    patches = [Patch(0, [a, r1], failures=2), Patch(1, [a_again, r2], failures=3), Patch(2, [r2], failures=1)]
    merged = UnionMerge().merge(patches)
    by_content = {m.edit.content.lower(): m for m in merged}
    assert by_content["dates as yyyy-mm-dd."].support == 2
    assert "one line." not in by_content  # r2 has more support on the same target
    assert by_content["two lines."].support == 2


def test_rank_and_clip_are_deterministic():
    patches = [Patch(0, [Edit("add", "", "a"), Edit("add", "", "b")], 1), Patch(1, [Edit("add", "", "b")], 1)]
    ranked = SupportRank().rank(UnionMerge().merge(patches))
    assert [m.edit.content for m in ranked] == ["b", "a"]
    selected, dropped = clip(ranked, 1)
    assert [m.edit.content for m in selected] == ["b"] and [m.edit.content for m in dropped] == ["a"]
    # Patch order given to merge does not matter (thread completion order).
    assert [m.edit.content for m in SupportRank().rank(UnionMerge().merge(patches[::-1]))] == ["b", "a"]
