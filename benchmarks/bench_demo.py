"""Time of ``fitaudit demo --quick`` with its quick settings and with the settings it had before.

The demo's end-to-end test (``tests/test_demo.py``) runs the quick demo
from an empty folder; the target is under 90 s on the project's 2-core
machine. Its two heaviest parts were the model zoo (members trained to the
zoo's stopping rule, up to 150 epochs) and the Shapes CNN (100 epochs);
the quick demo now stops the zoo's members after ``zoo_epochs`` and trains
the CNN ``epochs`` (:data:`fitaudit.demo.SETTINGS`). Side by side, each in
a fresh process and a fresh folder, with ``OMP_NUM_THREADS=1``: the wall
and CPU seconds of the run, each part's seconds, and the known answers
found (the same answers must come out). The load average is printed before
and after: on a shared machine the wall time follows it.

Run: ``python benchmarks/bench_demo.py [--out DIR]``; output in
``benchmarks/results/demo_quick.txt`` (pasted by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the quick settings before (2026-11-26, 707c932: zoo to its own rule, CNN 100 epochs) and now
VARIANTS = {"before": {"epochs": 100, "zoo_epochs": None}, "now": {}}

_RUN = """
import json, sys
from fitaudit import demo
demo.SETTINGS["quick"].update(json.loads(sys.argv[1]))
result = demo.run_demo(quick=True, out=sys.argv[2], progress=False)
print(json.dumps({"parts": {p.id: p.seconds for p in result.parts}, "verdict": result.verdict().numbers}))
"""


def _run(changes: dict, out: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(changes), str(out)], capture_output=True,
                          text=True, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": time.perf_counter() - start,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder for the runs (default: a temporary one)")
    args = parser.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="bench-demo-"))
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    runs = {name: _run(changes, root / name) for name, changes in VARIANTS.items()}
    print(f"load average after:  {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'':36s} {'before':>9s} {'now':>9s}")
    for key in ("wall", "cpu"):
        print(f"{key + ' seconds':36s} {runs['before'][key]:9.1f} {runs['now'][key]:9.1f}")
    for part in runs["now"]["parts"]:
        print(f"{part:36s} {runs['before']['parts'][part]:9.1f} {runs['now']['parts'][part]:9.1f}")
    for name, run in runs.items():
        verdict = run["verdict"]
        print(f"{name}: {verdict['met']} of {verdict['known']} known answers found")


if __name__ == "__main__":
    main()
