"""Zip archives bounded before they are inflated (issue 46 item 2): crafted bombs, refused in one line."""

from __future__ import annotations

import tracemalloc
import zipfile

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.data.archives import check_archive
from fitaudit.data.io import read_npz
from fitaudit.data.limits import Limits, parse_limits, using_limits
from zip_bombs import state_size, zip_with


def test_an_honest_archive_within_the_bounds_passes(tmp_path):
    path = zip_with(tmp_path / "ok.zip", {"config.json": b"{}", "w.bin": bytes(10_000)})
    check_archive(path, name="--model")
    stored = zip_with(tmp_path / "stored.zip", {"w.bin": bytes(10_000)}, zipfile.ZIP_STORED)
    check_archive(stored, name="--model")
    check_archive(tmp_path / "missing.zip", name="--model")  # not a zip: its reader says why


def test_a_member_above_the_bound_is_refused_from_the_central_directory(tmp_path):
    path = zip_with(tmp_path / "bomb.zip", {"model.weights.h5": bytes(50_000)})
    with using_limits(archive_member_bytes=10_000), pytest.raises(InputError) as caught:
        check_archive(path, name="--model")
    text = str(caught.value)
    assert "'model.weights.h5' inflates to 48.8 KiB" in text and "50,000 is more than the 10,000" in text
    assert "`--limit archive-member-bytes=50000`" in text and "\n" not in text


def test_a_json_member_has_its_own_smaller_bound_and_the_total_is_bounded(tmp_path):
    path = zip_with(tmp_path / "config.zip", {"config.json": b" " * 5_000, "a.bin": bytes(6_000)})
    with using_limits(model_config_bytes=4_000), pytest.raises(InputError, match="model-config-bytes=5000"):
        check_archive(path, name="--model")
    with using_limits(archive_bytes=10_000), pytest.raises(InputError, match=r"its 2 members inflate to .*"
                                                                              r"archive-bytes=11000"):
        check_archive(path, name="--model")


def test_the_defaults_are_a_few_gib(tmp_path):
    bounds = Limits()
    assert (bounds.archive_bytes, bounds.archive_member_bytes, bounds.model_config_bytes) == (
        4 * 2**30, 2 * 2**30, 64 * 2**20)
    assert parse_limits(["archive-member-bytes=3e9"]) == {"archive_member_bytes": 3_000_000_000}


@pytest.mark.slow
def test_a_header_understating_a_member_is_refused_with_memory_bounded(tmp_path):
    """A member stating 1,000 bytes that inflates to 64 MiB: stopped at its stated size, a chunk in memory."""
    path = zip_with(tmp_path / "liar.zip", {"config.json": b"{}", "model.weights.h5": bytes(64 * 2**20)})
    state_size(path, "model.weights.h5", 1_000)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            check_archive(path, name="--model")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "member 'model.weights.h5' does not inflate to the 1000 B its header states" in str(caught.value)
    assert peak < 8 * 2**20


def test_a_stored_member_whose_data_is_longer_than_stated_is_refused(tmp_path):
    path = zip_with(tmp_path / "stored.zip", {"w.bin": bytes(10_000)}, zipfile.ZIP_STORED)
    state_size(path, "w.bin", 100)
    with pytest.raises(InputError, match="'w.bin' does not inflate to the 100 B"):
        check_archive(path, name="--model")


def test_an_npz_dataset_is_bounded(tmp_path):
    path = tmp_path / "data.npz"
    np.savez_compressed(path, x=np.zeros((100, 50)), y=np.zeros(100, dtype=int))
    with using_limits(archive_member_bytes=20_000), pytest.raises(InputError, match="member 'x.npy' inflates"):
        read_npz(path, name="--data")
    state_size(path, "x.npy", 2_000)
    with pytest.raises(InputError, match="`--data`: .* member 'x.npy' does not inflate to the"):
        read_npz(path, name="--data")
