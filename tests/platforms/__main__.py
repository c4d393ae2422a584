"""`python -m tests.platforms`: every platform check of this package (what .ci/run runs after the suite;
WASI runs in the suite too); exit status 1 when any differs, 2 when one cannot be provisioned."""

from __future__ import annotations

import sys

from tests.platforms import freethreaded, i386, musl, wasi

if __name__ == "__main__":
    statuses = []
    for name, check in (
        ("wasi", wasi.main),
        ("i386", i386.main),
        ("musl", musl.main),
        ("free-threaded", freethreaded.main),
    ):
        print(f"== {name}", flush=True)
        statuses.append(check())
    sys.exit(max(statuses))
