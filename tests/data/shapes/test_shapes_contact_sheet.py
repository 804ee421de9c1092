"""The contact sheet: the image grid (data side) and its PNG (report side)."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.shapes.contact_sheet import DEFAULT_SWEEPS, contact_sheet_images
from fitaudit.report.shapes import write_contact_sheet


def test_grid_has_one_row_per_class_and_one_column_per_sweep():
    images, rows, columns = contact_sheet_images(classes=["cube", "star"], n_random=2, image_size=16)
    assert images.shape == (2, len(DEFAULT_SWEEPS) + 2, 3, 16, 16)
    assert rows == ["cube", "star"] and columns[0] == "default" and columns[-2:] == ["random 1", "random 2"]
    assert images.min() >= 0.0 and images.max() <= 1.0
    assert not np.array_equal(images[0, 0], images[1, 0])  # the two classes differ
    again, _, _ = contact_sheet_images(classes=["cube", "star"], n_random=2, image_size=16)
    np.testing.assert_array_equal(images, again)
    with pytest.raises(InputError, match="needs at least one column"):
        contact_sheet_images(sweeps=(), n_random=0)


@pytest.mark.slow
def test_png_is_written_and_other_suffixes_refused(tmp_path):
    summary = write_contact_sheet(tmp_path / "sheet.png", classes=["cube"], n_random=0, image_size=16)
    assert summary["rows"] == ["cube"] and summary["image_size"] == 16
    assert (tmp_path / "sheet.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="`path` must end in .png"):
        write_contact_sheet(tmp_path / "sheet.jpg")
