"""Sequential rounds: how many model calls a run had to make one after another.

Observed rounds are measured: the longest chain of paid calls in which each call started after
the previous one had ended. A run whose calls all take L seconds cannot finish in less than
L x observed rounds, whatever its concurrency, so this is the figure that latency multiplies.
"""

from __future__ import annotations

import bisect
import threading
import time


class CallClock:
    """Start and end times of paid calls. `start` and `end` of one call run on the same thread
    (a rollout or an analyst call is one unit of work on one worker thread)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._intervals: list[tuple[float, float]] = []

    def start(self) -> None:
        self._local.started = time.monotonic()

    def end(self, paid: bool) -> None:
        started = getattr(self._local, "started", None)
        self._local.started = None
        if started is not None and paid:
            with self._lock:
                self._intervals.append((started, time.monotonic()))

    def rounds(self) -> int:
        with self._lock:
            return longest_chain(list(self._intervals))


def longest_chain(intervals: list[tuple[float, float]]) -> int:
    """The most intervals in a chain where each starts no earlier than the previous one ended.

    Calls are visited by start time; a call ending by the time another starts was visited
    before it (it started earlier), so its depth is final when it is read."""
    by_start = sorted(intervals)
    by_end = sorted(range(len(by_start)), key=lambda i: by_start[i][1])
    ends = [by_start[i][1] for i in by_end]
    depth = [0] * len(by_start)
    best_before = 0  # deepest chain among the calls ended so far
    done = 0
    for index, (started, _) in enumerate(by_start):
        limit = bisect.bisect_right(ends, started)
        while done < limit:
            best_before = max(best_before, depth[by_end[done]])
            done += 1
        depth[index] = best_before + 1
    return max(depth, default=0)
