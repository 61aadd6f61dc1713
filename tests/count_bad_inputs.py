"""Count the bad-input table of tests/bad_inputs.py: every case run in-process through
``aiayn.cli.main``; prints "N bad inputs, T tracebacks, S silent" for docs/reliability-inputs.md.

  python -m tests.count_bad_inputs            the whole table (about half a minute)
  python -m tests.count_bad_inputs --quick    every 10th case
  python -m tests.count_bad_inputs --json bad_inputs.json

(from the repository root: it imports the table as every test does, from tests.bad_inputs).

A traceback is an exception escaping main (or "Traceback" on stderr), silent is exit status 0,
unclear is a refusal whose one error line lacks the expected name of the setting or file.
Exits 1 unless all three are 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 10th case only")
    parser.add_argument("--json", metavar="FILE", help="write the counts and failures as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.__stderr__)
    import torch

    torch.set_num_threads(1)
    from tests.bad_inputs import all_cases, build_world, problems, run_case

    cases = all_cases()
    if args.quick:
        cases = cases[::10]
    counts = collections.Counter()
    by_verb = collections.Counter()
    failures = []
    with tempfile.TemporaryDirectory() as root:
        world = build_world(Path(root) / "world")
        for i, case in enumerate(cases):
            tmp = Path(root) / f"case{i}"
            found = problems(case, run_case(case, world, tmp), world, tmp)
            by_verb[case.argv[0] if case.argv else "(none)"] += 1
            counts["traceback"] += any(p == "traceback" for p in found)
            counts["silent"] += any(p.startswith("silent") for p in found)
            counts["unclear"] += any(p.startswith(("message", "0 error", "2 error")) for p in found)
            if found:
                failures.append({"case": case.id, "problems": found})
    line = f"{len(cases)} bad inputs, {counts['traceback']} tracebacks, {counts['silent']} silent"
    print(f"{line} ({counts['unclear']} unclear)")
    print("per verb: " + ", ".join(f"{v} {n}" for v, n in sorted(by_verb.items())))
    for f in failures:
        print(f"  {f['case']}: {'; '.join(f['problems'])}")
    if args.json:
        report = {"cases": len(cases), **counts, "per_verb": by_verb, "failures": failures}
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
