"""Issue 51, item 4: what the command line prints and writes names its options, never the library's keywords.

A skipped part's reason names the argument that would let it run: from
``fitaudit audit`` the option (``--train-data``), from Python the keyword
(``train_data=``), through the one table :data:`fitaudit._names.CLI_OPTIONS`.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from fitaudit._names import CLI_OPTIONS, named
from fitaudit.cli import build_parser, main
from fitaudit.options import RunOptions

#: a library keyword as a message would name it: `train_data`, `models=`, `learner=` ...
KEYWORD = re.compile("`(?:" + "|".join(CLI_OPTIONS) + ")=?`")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    skops_io = pytest.importorskip("skops.io")
    folder = tmp_path_factory.mktemp("names")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["y"] = (frame["a"] + 0.5 * rng.normal(size=120) > 0).astype(int)
    frame.to_csv(folder / "test.csv", index=False)
    skops_io.dump(DecisionTreeClassifier(max_depth=3, random_state=0).fit(frame[["a", "b"]], frame["y"]),
                  folder / "tree.skops")
    return folder


def _strings(value):
    """Every string value in a JSON document (not its keys)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_every_option_in_the_table_is_an_option_of_audit_or_inspect():
    parser = build_parser()
    commands = {name: sub for action in parser._actions if hasattr(action, "choices") and action.choices
                for name, sub in action.choices.items()}
    options = {flag for name in ("audit", "inspect") for action in commands[name]._actions
               for flag in action.option_strings}
    assert set(CLI_OPTIONS.values()) <= options


def test_audit_on_a_table_names_the_options_in_every_output(table, tmp_path, capsys):
    out = tmp_path / "audit"
    code = main(["audit", "--model", str(table / "tree.skops"), "--data", str(table / "test.csv"),
                 "--label", "y", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    stored = json.loads((out / "audit.json").read_text())
    page = re.sub(r"<pre>.*?</pre>", "", (out / "report.html").read_text(), flags=re.S)  # settings as JSON
    written = {"stdout": captured.out, "stderr": captured.err, "report.html": page,
               "audit.json": "\n".join(_strings(stored))}  # the words: the keys are the file's format
    for where, text in written.items():
        assert not KEYWORD.findall(text), (where, KEYWORD.findall(text))
        for keyword in ("train_data", "train_images", "models=", "learner="):
            assert keyword not in text, (where, keyword)
    skipped = {p["id"]: p["verdict"]["sentence"] for p in stored["parts"]
               if p["verdict"]["status"] == "skipped"}
    assert "`--train-data`, or `--train-images` with `--images`" in skipped["leakage"]
    assert "`--models`" in skipped["agreement"]
    assert "`--learner`" in skipped["pmv"] and "`--train-data`" in skipped["pmv"]
    assert "`--shapes-classes`" in skipped["examine"] and "`--task`" in skipped["pgdl"]
    assert "(`--train-data`)" in captured.out  # the baseline's words, printed in the summary


def test_inspect_names_the_options(table, capsys):
    assert main(["inspect", "--model", str(table / "tree.skops"), "--data", str(table / "test.csv"), "--label", "y",
                 "--json", "--quiet"]) == 0
    parts = {p["id"]: p["verdict"]["sentence"] for p in json.loads(capsys.readouterr().out)["first_questions"]}
    assert "`--train-data`" in parts["leakage"] and "`--models`" in parts["agreement"]
    assert not KEYWORD.findall(" ".join(parts.values()))


def test_python_keeps_the_keywords(table):
    from fitaudit import audit

    frame = pd.read_csv(table / "test.csv")
    result = audit(str(table / "tree.skops"), frame, label="y", options=RunOptions(progress=False))
    skipped = {p.id: p.sentence for p in result.parts if p.status == "skipped"}
    assert "(`train_data=`, or `train_images=` with `images=`)" in skipped["leakage"]
    assert "`models=`" in skipped["agreement"]
    assert "`learner=`" in skipped["pmv"] and "`train_data=`" in skipped["pmv"]
    assert "`generator=`" in skipped["examine"] and "`task=`" in skipped["pgdl"]
    assert "--" not in " ".join(skipped.values())


def test_named_renders_either_name():
    assert named("models") == "`models=`"
    assert named("models", CLI_OPTIONS) == "`--models`"
    assert named("aeg", CLI_OPTIONS) == "`aeg=`"  # no option sets it: the keyword
