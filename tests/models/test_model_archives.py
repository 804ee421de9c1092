"""`.keras` and `.skops` bombs refused before they are inflated, in the API and the CLI (issue 46 item 2)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.cli import main
from fitaudit.data.limits import using_limits
from fitaudit.models import load_model
from fitaudit.models.formats.skops import load_skops
from zip_bombs import state_size

os.environ.setdefault("KERAS_BACKEND", "torch")


@pytest.fixture
def keras_file(tmp_path):
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip("keras was imported on another backend")
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    path = tmp_path / "net.keras"
    model.save(path)
    return path


def one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_keras_member_above_a_lowered_bound_is_refused(keras_file, capsys):
    with using_limits(archive_member_bytes=2_000), pytest.raises(InputError, match="'model.weights.h5' inflates"):
        load_model(keras_file)
    err = one_line_exit_2(["inspect", "--model", str(keras_file), "--limit", "archive-member-bytes=2000"], capsys)
    assert "member 'model.weights.h5' inflates to" in err and "`--limit archive-member-bytes=" in err
    with using_limits(model_config_bytes=100), pytest.raises(InputError, match="'config.json' inflates"):
        load_model(keras_file)


@pytest.mark.parametrize("member", ["config.json", "model.weights.h5"])
def test_a_keras_member_inflating_past_its_stated_size_is_refused(keras_file, member, capsys):
    state_size(keras_file, member, 10)
    with pytest.raises(InputError, match=f"member '{member}' does not inflate to the 10 B its header states"):
        load_model(keras_file)
    err = one_line_exit_2(["inspect", "--model", str(keras_file)], capsys)
    assert f"member '{member}' does not inflate" in err


def test_a_skops_bomb_is_refused_before_skops_reads_it(tmp_path, capsys):
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    x, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    path = tmp_path / "m.skops"
    skops_io.dump(LogisticRegression().fit(x, y), path)
    load_skops(path)
    with using_limits(model_config_bytes=100), pytest.raises(InputError, match="'schema.json' inflates"):
        load_skops(path)
    state_size(path, "schema.json", 10)
    with pytest.raises(InputError, match="member 'schema.json' does not inflate"):
        load_skops(path)
    assert "does not inflate" in one_line_exit_2(["inspect", "--model", str(path)], capsys)
