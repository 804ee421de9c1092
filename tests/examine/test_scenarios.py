"""Scenarios: the sample of correctly classified images, the space check, the sensitivity profile."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine.profile import MIN_BIN, sensitivity_profile
from fitaudit.examine.scenarios import (
    FOREIGN_DROP,
    FOREIGN_FACTOR_DROP,
    balanced_sample,
    factor_drops,
    image_scenario,
    space_check,
    with_factor_drops,
)

pytest.importorskip("torch")


def test_balanced_sample_takes_classes_in_turn_and_only_eligible_rows():
    labels = np.array([0] * 10 + [1] * 10 + [2] * 2)
    eligible = np.ones(22, dtype=bool)
    eligible[:8] = False  # class 0 has two eligible rows left
    picked = balanced_sample(labels, eligible, 9, random_state=0)
    assert len(picked) == 9 and len(set(picked)) == 9 and eligible[picked].all()
    assert np.bincount(labels[picked], minlength=3).tolist() == [2, 5, 2]
    assert np.array_equal(picked, balanced_sample(labels, eligible, 9, random_state=0))
    assert len(balanced_sample(labels, eligible, 100)) == eligible.sum()  # no more than there are


def test_space_check_numbers_and_threshold():
    check = space_check([True] * 9 + [False], [True] * 3 + [False] * 7, reference="test")
    assert check["clean_accuracy"] == 0.9 and check["random_accuracy"] == 0.3
    assert check["drop"] == pytest.approx(0.6) and check["foreign"] and check["threshold"] == FOREIGN_DROP
    assert not space_check([True] * 4, [True, True, True, False], reference="test")["foreign"]
    with pytest.raises(InputError, match="at least one"):
        space_check([], [True], reference="test")


def test_sensitivity_profile_matches_a_loop():
    space = FactorSpace([Factor("a", 0.0, 1.0, 0.5, "u"), Factor("b", -2.0, 2.0, 0.0, "u"), Factor("c", 3.0, 3.0, 3.0, "u")])
    rng = np.random.default_rng(0)
    factors = np.column_stack([rng.random(500), rng.uniform(-2, 2, 500), np.full(500, 3.0)])
    correct = factors[:, 0] < 0.5  # accuracy depends on a only
    profile = sensitivity_profile(factors, correct, space, n_bins=4)
    assert list(profile["factors"]) == ["a", "b"]  # a first (largest spread); c has no range
    for name, column, (low, high) in (("a", 0, (0.0, 1.0)), ("b", 1, (-2.0, 2.0))):
        width = (high - low) / 4
        for k in range(4):
            inside = [i for i in range(500) if low + k * width <= factors[i, column] < low + (k + 1) * width]
            assert profile["factors"][name]["count"][k] == len(inside)
            assert profile["factors"][name]["accuracy"][k] == pytest.approx(np.mean(correct[inside]))
    assert profile["factors"]["a"]["accuracy"] == [1.0, 1.0, 0.0, 0.0] and profile["factors"]["a"]["spread"] == 1.0
    assert profile["factors"]["b"]["spread"] < 0.2
    assert profile["accuracy"] == pytest.approx(correct.mean()) and profile["n_queries"] == 500
    sparse = sensitivity_profile(factors[: MIN_BIN], correct[: MIN_BIN], space, n_bins=4)
    assert sparse["factors"]["a"]["spread"] is None  # no bin holds MIN_BIN queries


class Brightness:
    """Class 1 when the mean normalised pixel is above 0, else 0: rotation-proof, fooled by brightness."""

    n_classes = 2
    input_shape = (3, 8, 8)

    def logits(self, x):
        m = np.asarray(x).mean(axis=(1, 2, 3))
        return np.column_stack([-10 * m, 10 * m])


def test_image_scenario_on_an_array_of_images():
    rng = np.random.default_rng(0)
    labels = np.array([0, 1] * 10)
    images = np.clip(0.5 + (labels[:, None, None, None] - 0.5) * 0.2 + 0.05 * rng.standard_normal((20, 3, 12, 12)), 0, 1)
    labels[:2] = 1 - labels[:2]  # two images the model gets wrong
    scenario = image_scenario(Brightness(), images.astype(np.float32), labels, padding=2, mean=[0.5] * 3, std=[0.25] * 3,
                              instances=6, factors={"brightness": (-0.3, 0.3)}, random_state=0)
    gen = scenario.generator
    assert gen.border == "canvas" and gen.crop_size == (8, 8)
    assert np.array_equal(scenario.instances, np.arange(6))
    assert np.bincount(gen.labels[scenario.instances]).tolist() == [3, 3]
    predicted = Brightness().logits(gen.model_input(scenario.instances)).argmax(axis=1)
    assert np.array_equal(predicted, gen.labels[scenario.instances])  # correctly classified, untouched
    assert scenario.scan == {"n_scanned": 20, "scan_accuracy": pytest.approx(18 / 20), "source": "images"}
    from fitaudit.examine import examine
    from fitaudit.examine.decision import examination_accuracies

    result = examine(Brightness(), gen, examiner="random", steps=2, instances=scenario.instances, random_state=0,
                     n_reference=40)
    check = scenario.check_space(result)
    # one random-factor accuracy: the space check's is the examination's own (its reference queries)
    assert check["random_accuracy"] == pytest.approx(examination_accuracies(result)[0])
    assert check["clean_accuracy"] == 1.0 and check["n_clean"] == 6 and check["n_random"] == 240
    assert check["scan_accuracy"] == pytest.approx(0.9) and "90% of 20 scanned" in check["reference"]
    # brightness widened to +-0.3 flips this model often, all factors at once (the old bar of the space check) ...
    assert check["random_accuracy"] < 1 - FOREIGN_DROP
    # ... but the screen decides, factor by factor: foreign only where one alone, far from its default, costs > 0.5
    rows = {row["factor"]: row for row in check["factors_alone"]}
    assert check["foreign"] == any(row["drop"] > FOREIGN_FACTOR_DROP for row in rows.values())
    assert rows["brightness"]["far_accuracy"] < rows["rotation"]["far_accuracy"]
    assert rows["brightness"]["n"] == 4 * rows["brightness"]["images"] and rows["brightness"]["images"] == 18
    # ... and brightness is the factor named: the model reads the mean pixel, which contrast and rotation keep
    assert check["factor_drops"][0]["factor"] == "brightness" and check["factor_drops"][0]["drop"] > 0.2
    assert check["factor_drops"][1]["drop"] < 0.6 * check["factor_drops"][0]["drop"]  # the others: within noise
    narrow = image_scenario(Brightness(), images.astype(np.float32), labels, padding=2, mean=[0.5] * 3, std=[0.25] * 3,
                            instances=6, factors={"brightness": 0.0, "contrast": 1.0}, random_state=0)
    narrow_result = examine(Brightness(), narrow.generator, examiner="random", steps=2, instances=narrow.instances,
                            random_state=0, n_reference=40)
    assert narrow.check_space(narrow_result)["random_accuracy"] > check["random_accuracy"]


def test_image_scenario_bad_input():
    images = np.full((4, 3, 8, 8), 0.5, dtype=np.float32)
    with pytest.raises(InputError, match="`images`: label 5 cannot be output"):
        image_scenario(Brightness(), images, [0, 1, 5, 0], instances=2)
    with pytest.raises(InputError, match="`labels` must be given"):
        image_scenario(Brightness(), images, instances=2)
    with pytest.raises(InputError, match="classifies none of the 4 images"):
        image_scenario(Brightness(), np.full((4, 3, 8, 8), 0.9, dtype=np.float32), [0, 0, 0, 0], mean=[0.5] * 3,
                       instances=2)


def test_the_reading_warns_of_a_foreign_space():
    from fitaudit.data.generators import CallableGenerator
    from fitaudit.examine import examine
    from fitaudit.report.verdicts import read

    space = FactorSpace([Factor("a", 0.0, 1.0, 0.5, "u")])
    gen = CallableGenerator(lambda i, f: f, factor_space=space, labels=[0, 1])
    result = examine(lambda x: np.column_stack([x[:, 0], 1 - x[:, 0]]), gen, examiner="random", steps=3,
                     random_state=0)
    plain = read(result)
    result.space_check = space_check([True] * 10, [True] * 2 + [False] * 8, reference="10 untouched images")
    warned = read(result)
    assert plain.status == "fail" and "may belong to the space" not in plain.sentence
    # a space the model was never meant to meet: its failures are not reported as the model's (status and words)
    assert (warned.status, result.verdict().reason) == ("inconclusive", "foreign_space")
    assert warned.headline.startswith("Inconclusive: ") and "not read as the model's failure" in warned.headline
    assert plain.details in warned.sentence and "weak spots" not in warned.sentence
    assert ("The failures may belong to the space rather than the model: on 10 untouched "
            "images, random factors take its accuracy from 1.00 untouched to 0.20") in warned.sentence
    assert result.verdict().numbers["random_accuracy"] == pytest.approx(0.2)
    result.space_check = space_check([True] * 10, [True] * 9 + [False], reference="10 untouched images")
    assert read(result) == plain  # a space the model handles: the failure stands


def test_factor_drops_match_a_loop():
    space = FactorSpace([Factor("a", -30.0, 30.0, 0.0, "deg"), Factor("b", 0.0, 2.0, 0.0, "px"),
                         Factor("c", 0.0, 360.0, 350.0, "deg", periodic=True), Factor("d", 1.0, 1.0, 1.0, "x")])
    rng = np.random.default_rng(1)
    n = 400
    values = {"a": rng.uniform(-30, 30, n), "b": rng.uniform(0, 2, n), "c": rng.uniform(0, 360, n), "d": np.ones(n)}
    labels = np.zeros(n, dtype=np.int64)
    predicted = np.where((np.abs(values["a"]) > 15) & (rng.random(n) < 0.8), 1, 0)  # fragile under a alone
    reference = {"label": labels, "predicted": predicted, **values}
    rows = factor_drops(reference, space.to_dict())
    assert [row["factor"] for row in rows][0] == "a" and "d" not in [row["factor"] for row in rows]  # d has no range
    right = predicted == labels
    # by hand: far = more than half the largest distance from the default (15 deg, 1 px; c around the circle: 90 deg)
    far = {"a": np.abs(values["a"]) > 15, "b": values["b"] > 1,
           "c": np.array([min(abs(v - 350), 360 - abs(v - 350)) > 90 for v in values["c"]])}
    for row in rows:
        mask = far[row["factor"]]
        assert row["split"] == {"a": 15, "b": 1, "c": 90}[row["factor"]]
        assert (row["n_far"], row["n_near"]) == (mask.sum(), (~mask).sum())
        assert row["far_accuracy"] == pytest.approx(right[mask].mean())
        assert row["near_accuracy"] == pytest.approx(right[~mask].mean())
        assert row["drop"] == pytest.approx(right[~mask].mean() - right[mask].mean())
    assert rows[0]["near_accuracy"] == 1.0 and rows[0]["far_accuracy"] < 0.3
    assert all(abs(row["drop"]) < 0.15 for row in rows[1:])


def test_the_foreign_verdict_names_the_factor_that_breaks_the_model():
    from fitaudit.data.generators import CallableGenerator
    from fitaudit.examine import examine
    from fitaudit.report.verdicts import read

    space = FactorSpace([Factor("rotation", -30.0, 30.0, 0.0, "deg"), Factor("light", -0.3, 0.3, 0.0, "added")])
    labels = np.array([0, 1, 0, 1])
    gen = CallableGenerator(lambda i, f: np.column_stack([f, labels[i]]), factor_space=space, labels=labels)

    def model(x):  # the label unless the rotation is beyond 15 degrees either way; the light changes nothing
        said = np.where(np.abs(x[:, 0]) <= 15, x[:, 2], 1 - x[:, 2]).astype(int)
        return np.eye(2)[said] * 10.0

    result = examine(model, gen, examiner="random", steps=4, random_state=0, n_reference=64)
    correct = np.asarray(result.reference_queries["predicted"]) == np.asarray(result.reference_queries["label"])
    result.space_check = with_factor_drops(space_check([True] * 4, correct, reference="4 untouched inputs"), result)
    verdict = result.verdict()
    assert verdict.reason == "foreign_space" and verdict.numbers["foreign_factor"] == "rotation"
    row = result.space_check["factor_drops"][0]
    assert verdict.numbers["factor_far_accuracy"] == row["far_accuracy"] and row["near_accuracy"] == 1.0
    sentence = read(result).sentence
    assert (f"The factor that costs most is rotation: the random queries with rotation more than 15 deg from 0 are "
            f"right {row['far_accuracy']:.2f} of the time against {row['near_accuracy']:.2f} with it nearer "
            f"({row['n_far']} and {row['n_near']} queries)") in sentence and "--factor rotation=LOW:HIGH" in sentence
    assert result.contradiction() is None
    tampered = dict(result.space_check, factor_drops=[dict(row, far_accuracy=0.99), *result.space_check["factor_drops"][1:]])
    result.space_check = tampered
    assert "space_check.factor_drops[0].far_accuracy" in result.contradiction()


class LeftBrighter:
    """Class 1 when the left half of the image is brighter than the right: every mirror image is misread."""

    n_classes = 2
    input_shape = (1, 8, 8)

    def logits(self, x):
        x = np.asarray(x)
        d = x[..., :4].mean(axis=(1, 2, 3)) - x[..., 4:].mean(axis=(1, 2, 3))
        return np.column_stack([-20 * d, 20 * d])


def _halves(n=40, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    images = np.full((n, 1, 8, 8), 0.4) + 0.02 * rng.standard_normal((n, 1, 8, 8))
    images[labels == 1, :, :, :4] += 0.3
    images[labels == 0, :, :, 4:] += 0.3
    return np.clip(images, 0, 1).astype(np.float32), labels


def test_the_screen_leaves_out_a_factor_the_classes_do_not_allow_unless_it_is_set():
    from fitaudit.examine import examine
    from fitaudit.report.verdicts import read

    images, labels = _halves()
    model = LeftBrighter()
    mirrored = model.logits(images[..., ::-1]).argmax(axis=1) == labels  # by hand: the model on mirror images
    assert not mirrored.any()
    scenario = image_scenario(model, images, labels, instances=8, random_state=0)
    rows = {row["factor"]: row for row in scenario.screen}
    # flip's far draws are the flipped ones (>= 0.5): all wrong, so the flip is left out, fixed at 0
    assert rows["flip"]["far_accuracy"] == 0.0 and rows["flip"]["n_far"] == rows["flip"]["n"] // 2
    assert rows["flip"]["left_out"] and scenario.left_out == {"flip": 0.0}
    assert (scenario.generator.factor_space["flip"].low, scenario.generator.factor_space["flip"].high) == (0.0, 0.0)
    assert not any(row["left_out"] for name, row in rows.items() if name != "flip")  # the others stay
    result = examine(model, scenario.generator, examiner="random", steps=3, instances=scenario.instances,
                     random_state=0, n_reference=16)
    result.space_check = scenario.check_space(result)
    assert not result.space_check["foreign"] and result.verdict().numbers["left_out"] == "flip"
    sentence = read(result).sentence
    assert "Left out of the examination as foreign to the model (a drop above 0.50 alone): flip alone, more than " \
           "0.5 from 0 (0 to 1 examined), takes the accuracy of" in sentence and "--factor flip=LOW:HIGH" in sentence
    assert result.contradiction() is None
    # set by the caller, the flip is examined: the space is foreign, and the verdict names the flip
    asked = image_scenario(model, images, labels, instances=8, random_state=0, factors={"flip": (0, 1)})
    assert asked.left_out == {} and asked.generator.factor_space["flip"].high == 1.0
    result = examine(model, asked.generator, examiner="random", steps=3, instances=asked.instances, random_state=0,
                     n_reference=16)
    result.space_check = asked.check_space(result)
    verdict = result.verdict()
    assert result.space_check["foreign"] and (verdict.status, verdict.reason) == ("inconclusive", "foreign_space")
    assert verdict.numbers["foreign_factor"] == "flip" and verdict.numbers["factor_far_accuracy"] == 0.0
    assert "narrow it (--factor flip=LOW:HIGH)" in read(result).sentence
    tampered = dict(result.space_check, foreign=False)
    result.space_check = tampered
    assert "space_check.foreign" in result.contradiction()
