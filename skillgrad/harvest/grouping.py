"""Near-duplicate requests grouped into clusters; a cluster's size says how recurring a task is.

Two requests are near-duplicates when their word sets (lower-cased, stop words dropped, numbers,
paths and hex ids masked) have a Jaccard similarity of at least 0.6, or when the smaller set (of
two words or more) is nearly contained in the larger one (overlap of at least 0.8) and is most of
it (Jaccard of at least 0.4): "deploy the app please" and "Deploy the app; the token is
[REDACTED]" are the same recurring request; "create the beads" and a long request that also
creates beads are not.
Clusters are the connected components of that relation (union-find), so the result does not depend
on the order of the requests; a cluster is named by a hash of its smallest normalised member.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict

THRESHOLD = 0.6
OVERLAP = 0.8
CONTAINED_JACCARD = 0.4  # a short request inside a long one is the same task only if it is most of it
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "pls",
        "should",
        "so",
        "that",
        "the",
        "then",
        "this",
        "to",
        "us",
        "we",
        "what",
        "will",
        "with",
        "would",
        "you",
        "your",
        "redacted",
    ]
)
_MASKS = (
    (re.compile(r"(?:[~.]?/[\w.@-]+)+/?"), " PATH "),  # /a/b.c, ./x, ~/y
    (re.compile(r"\b[0-9a-f]{7,}\b"), " ID "),
    (re.compile(r"\d+"), " N "),
)
_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    text = text.lower()
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return " ".join(_WORD.findall(text))


def _similar(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    if not a or not b:
        return a == b
    common, jaccard = len(a & b), len(a & b) / len(a | b)
    contained = min(len(a), len(b)) >= 2 and common / min(len(a), len(b)) >= OVERLAP
    return jaccard >= threshold or (contained and jaccard >= CONTAINED_JACCARD)


def cluster_ids(requests: list[str], threshold: float = THRESHOLD) -> list[str]:
    """A cluster id per request (same id = near-duplicates, transitively)."""
    norms = [normalise(r) for r in requests]
    words = [frozenset(w for w in n.split() if w not in _STOP) for n in norms]
    parent = list(range(len(requests)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(requests)):
        for j in range(i):
            if _similar(words[i], words[j], threshold):
                parent[root(i)] = root(j)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(requests)):
        members[root(i)].append(i)
    names: dict[int, str] = {}
    for r, group in members.items():
        smallest = min(norms[i] for i in group)
        names[r] = "c" + hashlib.sha256(smallest.encode("utf-8")).hexdigest()[:10]
    return [names[root(i)] for i in range(len(requests))]
