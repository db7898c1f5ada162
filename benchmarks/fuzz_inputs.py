"""The long fuzz run: generated requests and hand edits against one workspace.

Same generators and property as ``tests/fuzz`` (installed only if the
validators accept it; otherwise a closed-enum code and the tree's digest
unchanged; never another exception), many more inputs. Prints inputs
tried, installs, no-ops, rejections by code, and property violations
(tracebacks) with the input that caused each.

    .venv/bin/python benchmarks/fuzz_inputs.py [--requests 2000] [--edits 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz.inputs import (SEED_PATH, SETUPS, current_ids, fresh_copy, hand_edit, make_workspace,  # noqa: E402
                         prepare, raw_request, run_hand_edit, run_request)


def run(kind: str, examples: int, rng_seed: int) -> tuple[collections.Counter, list[str]]:
    counts: collections.Counter = collections.Counter()
    violations: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fuzz-inputs-") as tmp:
        template = make_workspace(Path(tmp) / "template")
        base, ids = template.read_topic(SEED_PATH), current_ids(template)

        @seed(rng_seed)
        @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate])
        @given(setup=SETUPS, data=st.data())
        def check(setup, data):
            ws = fresh_copy(template.settings.state_dir, Path(tmp) / "state")
            prepare(ws, setup)
            if kind == "request":
                case = data.draw(raw_request(base, ids))
                call = lambda: run_request(ws, case)  # noqa: E731
            else:
                path, draft = data.draw(hand_edit(base))
                case = (path, draft)
                call = lambda: run_hand_edit(ws, path, draft)  # noqa: E731
            try:
                counts[call().kind] += 1
            except Exception:  # a property violation: counted and shown, the run goes on
                counts["TRACEBACK"] += 1
                violations.append(f"{case!r:.300}\n{traceback.format_exc(limit=6)}")

        check()
    return counts, violations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    total_violations = 0
    for kind, examples in (("request", args.requests), ("hand edit", args.edits)):
        started = time.monotonic()
        counts, violations = run(kind, examples, args.seed)
        tried = sum(counts.values())
        rejected = {k: v for k, v in counts.items() if k not in ("installed", "no-change", "TRACEBACK")}
        print(f"\n{kind}s: {tried} inputs tried in {time.monotonic() - started:.0f} s")
        print(f"  installed   {counts['installed']}")
        print(f"  no change   {counts['no-change']}")
        print(f"  rejected    {sum(rejected.values())}")
        for code, n in sorted(rejected.items(), key=lambda item: -item[1]):
            print(f"    {code:<28} {n}")
        print(f"  tracebacks  {counts['TRACEBACK']}")
        for text in violations[:5]:
            print("  ---\n  " + text.replace("\n", "\n  "))
        total_violations += len(violations)
    sys.exit(1 if total_violations else 0)


if __name__ == "__main__":
    main()
