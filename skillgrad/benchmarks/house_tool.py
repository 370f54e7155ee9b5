#!/usr/bin/env python3
"""`house`: the house shipping CLI of the `housecli` benchmark, copied into each task's workspace
as `tools/house.py`. Its options are documented nowhere in the tool (no --help): only in the
skill's references, which is what the benchmark measures.

    python tools/house.py quote --zone ZONE --lane LANE --weight GRAMS

prints `quote <CODE> (zone ZONE, lane LANE, GRAMS g)`. ZONE is a house zone code (a city's code
from the zone table), LANE one of express, ground, freight, GRAMS whole grams.
"""

from __future__ import annotations

import hashlib
import sys

LANES = ("express", "ground", "freight")
ZONES = {  # city -> house zone code (the table lives in the skill's references, not here)
    "Lisbon": "PT-2",
    "Oslo": "NO-7",
    "Lyon": "FR-4",
    "Graz": "AT-3",
    "Porto": "PT-5",
    "Turin": "IT-8",
    "Ghent": "BE-1",
    "Krakow": "PL-6",
}


def quote_code(zone: str, lane: str, grams: int) -> str:
    digest = hashlib.sha256(f"house|{zone}|{lane}|{grams}".encode()).hexdigest()[:6].upper()
    return f"Q{zone.replace('-', '')}{lane[0].upper()}-{digest}"


def _fail(message: str) -> int:
    print(f"house: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "quote":
        return _fail("unknown command; see the house reference")
    options: dict[str, str] = {}
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag not in ("--zone", "--lane", "--weight") or not rest:
            return _fail(f"unknown option {flag!r}; see the house reference")
        options[flag[2:]] = rest.pop(0)
    if set(options) != {"zone", "lane", "weight"}:
        return _fail("quote needs all of its options; see the house reference")
    if options["zone"] not in ZONES.values():
        return _fail(f"unknown zone {options['zone']!r}")
    if options["lane"] not in LANES:
        return _fail(f"unknown lane {options['lane']!r}")
    if not options["weight"].isdigit():
        return _fail(f"weight {options['weight']!r} is not a whole number")
    grams = int(options["weight"])
    code = quote_code(options["zone"], options["lane"], grams)
    print(f"quote {code} (zone {options['zone']}, lane {options['lane']}, {grams} g)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
