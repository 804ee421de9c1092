"""benchmarks/compare_audit_json.py: every difference of two audit.json files listed, volatile keys apart."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_audit_json.py"
spec = importlib.util.spec_from_file_location("compare_audit_json", SCRIPT)
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)

AUDIT = {"settings": {"out": "/tmp/a"}, "created": "today", "seconds": 3.0,
         "parts": [{"id": "accuracy", "key": "k1", "numbers": {"accuracy": 0.9}, "settings": {"images": "/tmp/a/x"}},
                   {"id": "pmv", "key": "k2", "numbers": {"k": 0.5}, "result": {"rates": [0.0, 0.1]}}]}


def run(tmp_path, before, after, *flags):
    paths = []
    for name, data in (("before.json", before), ("after.json", after)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    return compare.main([*flags, *paths])


def test_runs_that_differ_only_in_volatile_keys_are_equal(tmp_path, capsys):
    other = copy.deepcopy(AUDIT)
    other.update(created="tomorrow", seconds=9.0, settings={"out": "/tmp/b"})
    other["parts"][0].update(key="k9", settings={"images": "/tmp/b/x"})  # the folder is the run's own
    assert run(tmp_path, AUDIT, other) == 0
    assert "differences (volatile aside): 0" in capsys.readouterr().out


def test_every_changed_number_added_part_and_removed_key_is_listed(tmp_path, capsys):
    other = copy.deepcopy(AUDIT)
    other["parts"].insert(0, {"id": "leakage", "numbers": {}})  # matched by id: the others do not shift
    other["parts"][2]["result"]["rates"][1] = 0.2
    del other["parts"][1]["numbers"]["accuracy"]
    assert run(tmp_path, AUDIT, other) == 1
    out = capsys.readouterr().out
    assert "parts.pmv.result.rates[1]: 0.1 -> 0.2" in out and "parts.leakage: " in out
    assert "parts.accuracy.numbers.accuracy: 0.9" in out and "differences (volatile aside): 3" in out
    assert run(tmp_path, AUDIT, other, "--summary") == 1
    assert "1 changed  parts.pmv.result" in capsys.readouterr().out
