"""fitaudit.audit on image data without a generator: the images themselves are examined under image transforms."""

from __future__ import annotations

import numpy as np
import pytest

import fitaudit
from fitaudit.auditing.parts import IMAGE_INSTANCES
from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_image_data_are_examined_by_default_and_the_part_is_reused(tiny_torch_net, shapes_tiny, tmp_path):
    data = (shapes_tiny.images, shapes_tiny.labels)
    kwargs = {"instruments": ["examine"], "examiner": "random", "examine_steps": 3, "checkpoint_dir": tmp_path / "out",
              "options": RunOptions(progress=False)}
    result = fitaudit.audit(tiny_torch_net, data, **kwargs)
    part = result.part("examine")
    assert part.status in ("pass", "fail", "inconclusive") and not part.resumed
    assert part.settings["generator"] == "image transforms" and part.settings["border"] == "reflection"
    examined = part.result
    assert "rotation" in examined.factor_names and examined.steps == 3
    # the examined images are ones the model classifies correctly untouched
    with torch.no_grad():
        predicted = tiny_torch_net(torch.from_numpy(shapes_tiny.images)).argmax(1).numpy()
    correct = int(np.sum(predicted == shapes_tiny.labels))
    assert len(examined.instances) == min(IMAGE_INSTANCES, correct)
    check = examined.space_check  # the examined images, correct untouched, under the examination's random queries
    from fitaudit.examine.decision import examination_accuracies

    assert check["clean_accuracy"] == 1.0 and check["scan_accuracy"] == pytest.approx(np.mean(predicted == shapes_tiny.labels))
    assert check["random_accuracy"] == pytest.approx(examination_accuracies(examined)[0])
    from fitaudit.examine.scenarios import FOREIGN_FACTOR_DROP

    # foreign: a factor examined (not left out) alone, far from its default, costs more than half the correct answers
    assert check["foreign"] == any(not row["left_out"] and row["drop"] > FOREIGN_FACTOR_DROP
                                   for row in check["factors_alone"])
    # a worst case below the average in a space foreign to the model is not the model's failure
    verdict = examined.verdict()
    assert (part.status == "inconclusive") == (verdict.reason == "foreign_space") and part.status == verdict.status
    assert part.status != "fail" or not check["foreign"]
    from fitaudit.auditing.parts import IMAGE_REFERENCE

    assert examined.sensitivity["n_queries"] == len(examined.instances) * IMAGE_REFERENCE
    pixels = [np.asarray(image["pixels"]) for image in part.images]  # [0, 1] images, not normalised inputs
    assert pixels and all(p.shape == (3, 32, 32) for p in pixels)
    again = fitaudit.audit(tiny_torch_net, data, **kwargs)
    assert again.part("examine").resumed and again.part("examine").numbers == part.numbers
    # the full query log is kept beside the checkpoints; without a checkpoint folder the part names no file
    assert (tmp_path / "out" / "examine").is_dir() and str(tmp_path / "out" / "examine") in part.settings["queries"]
    assert np.load(part.settings["queries"])["loss"].shape == (len(examined.queries["label"]),)
    unkept = fitaudit.audit(tiny_torch_net, data, **{**kwargs, "checkpoint_dir": None})
    assert unkept.part("examine").settings["queries"] is None and unkept.part("examine").numbers == part.numbers


def test_data_that_are_not_images_still_skip_with_the_reason(tmp_path):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    result = fitaudit.audit(LogisticRegression().fit(x, y), (x, y), options=RunOptions(progress=False))
    part = result.part("examine")
    assert part.status == "skipped" and "image data in [0, 1]" in part.sentence


@pytest.mark.slow
def test_factors_narrow_the_examined_space_and_name_it(tiny_torch_net, shapes_tiny, tmp_path):
    from fitaudit._errors import InputError
    from fitaudit.auditing.parts import image_examination_title

    data = (shapes_tiny.images, shapes_tiny.labels)
    kwargs = {"instruments": ["examine"], "examiner": "random", "examine_steps": 2, "options": RunOptions(progress=False)}
    factors = {"rotation": (-10, 10), "noise": 0.0, "occlusion": 0.0, "blur": 0.0}
    result = fitaudit.audit(tiny_torch_net, data, factors=factors, **kwargs)
    part = result.part("examine")
    examined = part.result
    ref = examined.reference_queries
    assert ref["rotation"].min() >= -10 and ref["rotation"].max() <= 10 and np.ptp(ref["rotation"]) > 0
    for fixed in ("noise", "occlusion", "blur"):
        assert np.all(ref[fixed] == 0.0) and np.all(examined.extreme_factors[:, examined.factor_names.index(fixed)] == 0)
    assert part.title == ("Adversarial examination of the images under flip, rotation -10..10, translation, scale, light, "
                          "JPEG quality")
    assert part.settings["factors"] == {"rotation": [-10.0, 10.0], "noise": 0.0, "occlusion": 0.0, "blur": 0.0}
    assert result.settings["factors"] == part.settings["factors"]
    default = fitaudit.audit(tiny_torch_net, data, **kwargs).part("examine")
    assert default.title == image_examination_title() and "rotation -" not in default.title
    assert default.settings["factors"] is None and default.numbers != part.numbers
    with pytest.raises(InputError, match="unknown factor 'spin'"):
        fitaudit.audit(tiny_torch_net, data, factors={"spin": (0, 1)}, **kwargs)
