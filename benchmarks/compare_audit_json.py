"""Compare two audit.json files: every key added or removed, every number or string that differs.

Usage: ``python benchmarks/compare_audit_json.py BEFORE/audit.json AFTER/audit.json [--rtol R]``.
Parts are matched by their ``id`` (and an index where ids repeat), so a part
added or removed shows as one line instead of shifting every later one. Keys
that differ by nature between runs (wall times, the creation stamp, the
environment, the output folder, the parts' keys: fingerprints of the whole
package's source) are listed under "volatile", not counted as differences;
the output folder (``settings.out``) is written ``<out>`` inside strings. Exit status 0 when nothing else differs, 1 otherwise.
Issue 47's done-when: a demo audit.json before and after the refactor,
numbers equal (``benchmarks/results/demo_audit_json_compare.txt``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

#: keys whose values change from run to run whatever the answers: timings, stamps, where it ran, and a part's
#: ``key`` and a generator's ``code``, fingerprints that include all of fitaudit's source (any edit changes them)
VOLATILE = {"seconds", "created", "environment", "checkpoint_dir", "wall_seconds", "cpu_seconds", "json_digest",
            "seconds_per_model", "total_seconds", "fit_seconds", "key", "code", "out"}


def _relative(value: Any, folder: str | None) -> Any:
    """``value`` with the run's output folder written ``<out>`` in every string (the two runs wrote apart)."""
    if folder is None:
        return value
    if isinstance(value, str):
        return value.replace(folder, "<out>")
    if isinstance(value, list):
        return [_relative(v, folder) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, folder) for k, v in value.items()}
    return value


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    """A list of parts keyed ``id`` (``id#2`` for a repeated id), or None when the items are not parts."""
    if not items or not all(isinstance(i, dict) and "id" in i for i in items):
        return None
    out: dict[str, Any] = {}
    for item in items:
        key, n = str(item["id"]), 1
        while key in out:
            n += 1
            key = f"{item['id']}#{n}"
        out[key] = item
    return out


def differences(a: Any, b: Any, path: str = "", rtol: float = 0.0) -> Iterator[tuple[str, str, Any, Any]]:
    """``(kind, path, before, after)`` for every difference: kind is added, removed, changed or volatile."""
    if path.rsplit(".", 1)[-1].split("[")[0] in VOLATILE:
        if a != b:
            yield "volatile", path, "...", "..."
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in b:
                yield "removed", where, a[key], None
            elif key not in a:
                yield "added", where, None, b[key]
            else:
                yield from differences(a[key], b[key], where, rtol)
        return
    if isinstance(a, list) and isinstance(b, list):
        ka, kb = _keyed(a), _keyed(b)
        if ka is not None and kb is not None:
            yield from differences(ka, kb, path, rtol)
            return
        if len(a) != len(b):
            yield "changed", f"{path} (length)", len(a), len(b)
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, f"{path}[{i}]", rtol)
        return
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if a == b or (math.isnan(a) and math.isnan(b)) or (rtol and math.isclose(a, b, rel_tol=rtol)):
            return
        yield "changed", path, a, b
        return
    if a != b:
        yield "changed", path, a, b


def _short(value: Any, width: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance of numbers (default 0: equal)")
    parser.add_argument("--summary", action="store_true",
                        help="count the differences by part and field (list indices dropped) instead of listing each")
    args = parser.parse_args(argv)
    with open(args.before, encoding="utf-8") as f:
        before = json.load(f)
    with open(args.after, encoding="utf-8") as f:
        after = json.load(f)
    before, after = (_relative(d, (d.get("settings") or {}).get("out")) for d in (before, after))
    found = list(differences(before, after, rtol=args.rtol))
    counted = [d for d in found if d[0] != "volatile"]
    if args.summary:
        groups: dict[tuple[str, str], int] = {}
        for kind, where, _, _ in counted:
            fields = re.sub(r"\[\d+\]", "[]", where).split(".")
            group = ".".join(fields[:3] if fields[0] == "parts" else fields[:2])
            groups[(group, kind)] = groups.get((group, kind), 0) + 1
        for (group, kind), n in sorted(groups.items()):
            print(f"{n:7d} {kind:8s} {group}")
        print(f"differences (volatile aside): {len(counted)}; volatile: {len(found) - len(counted)}")
        return 1 if counted else 0
    for kind in ("removed", "added", "changed", "volatile"):
        rows = [d for d in found if d[0] == kind]
        print(f"{kind}: {len(rows)}")
        for _, where, a, b in rows:
            if kind == "changed":
                print(f"  {where}: {_short(a)} -> {_short(b)}")
            elif kind != "volatile":
                print(f"  {where}: {_short(a if kind == 'removed' else b)}")
            else:
                print(f"  {where}")
    print(f"differences (volatile aside): {len(counted)}")
    return 1 if counted else 0


if __name__ == "__main__":
    sys.exit(main())
