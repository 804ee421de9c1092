"""The demo's parts and known answers, piece by piece (tests/test_demo.py runs the whole demo).

Known answers live with the demo (:mod:`fitaudit.demo.answers`), computed
from the parts; the audit's parts carry none.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart, AuditResult
from fitaudit.demo.answers import DemoResult, as_demo, known_answers
from fitaudit.demo.selection import GAIN, PART_IDS, assemble, assembled, selection_known_answers
from fitaudit.stats import accuracy, agreement


@pytest.mark.slow
def test_demo_planted_folder_twins_are_all_found(tmp_path):
    pytest.importorskip("PIL.Image")
    from fitaudit.demo.planted import planted_folders_part, planted_known_answer

    part = planted_folders_part(tmp_path / "planted", 0, n_objects=8, renders=3, n_per_kind=4)
    assert part.numbers["recall, jpeg"] == 1.0 and part.numbers["recall, shift"] == 1.0
    # at 96 training images the twin count alone may not reach the level (inconclusive); never a pass beside twins
    assert planted_known_answer(part)["met"] is True and part.status in ("fail", "inconclusive")
    missed = dict(part.numbers, **{"recall, jpeg": 3 / 4})
    assert planted_known_answer(dataclasses.replace(part, numbers=missed))["met"] is False
    assert len(list((tmp_path / "planted" / "test").rglob("*.jpg"))) == 4


def test_each_region_gets_its_most_accurate_run():
    """By hand: 3 runs, 6 choosing inputs in 3 regions (region 2 has none: run 0)."""
    correct = np.array([[1, 0, 1, 1, 0, 0],
                        [0, 1, 1, 0, 1, 1],
                        [1, 1, 0, 0, 0, 1]], dtype=bool)
    regions = np.array([0, 0, 1, 1, 3, 3])
    chosen = assemble(correct, regions, 4)
    # region 0: runs 0, 1, 2 get 1, 1, 2 right -> 2; region 1: 2, 1, 0 -> 0; region 2: none -> 0; region 3: 0, 2, 1 -> 1
    assert chosen.tolist() == [2, 0, 0, 1]
    predictions = np.array([[10, 11, 12], [20, 21, 22], [30, 31, 32]])
    assert assembled(predictions, chosen, np.array([3, 0, 1])).tolist() == [20, 31, 12]


def _agreement_part(part_id, predicted, other, y, numbers=None):
    result = agreement(predicted, other, measured=accuracy(y, predicted))
    return part_from_result(part_id, "first", part_id, result, numbers=numbers or {})


def test_the_choice_on_the_test_labels_is_found_only_when_its_gain_is_visible():
    """The known answer needs both: a gain above the check's detectable gain, and a failing verdict."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 800)
    other = np.where(rng.random(800) < 0.85, y, (y + 1) % 10)  # the other assembly: right on about 85%
    chosen = np.where(rng.random(800) < 0.97, y, (y + 1) % 10)  # inflated on these labels
    part = _agreement_part(PART_IDS["test"], chosen, other, y, {GAIN: 0.10})
    seen = part.result.verdict().numbers["detectable_gain"]
    assert part.status == "fail" and seen < 0.10
    answer = selection_known_answers({part.id: part})[part.id]
    assert answer["met"] is True and "by 0.100, more than" in answer["text"] and f"({seen:.3f})" in answer["text"]
    small = dataclasses.replace(part, numbers={GAIN: seen / 2})  # a failing verdict, but not from this gain
    assert selection_known_answers({part.id: small})[part.id]["met"] is False
    honest = _agreement_part(PART_IDS["validation"], other, other[::-1], y)
    assert selection_known_answers({honest.id: honest})[honest.id]["met"] is (not honest.result.measured_above())


def _demo(parts):
    return DemoResult(title="t", subject={}, parts=parts, settings={"out": "."}, environment={}, random_state=0,
                      seconds=0.0, created="now")


@pytest.mark.slow
def test_known_answers_are_the_demos_not_the_parts(tmp_path):
    """The parts carry no known answer; the demo's result computes them, writes a copy, and reads them again."""
    from fitaudit.report import audit_page
    from fitaudit.report.saved import read_saved_audit

    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 800)
    other = np.where(rng.random(800) < 0.85, y, (y + 1) % 10)
    part = _agreement_part(PART_IDS["test"], np.where(rng.random(800) < 0.97, y, (y + 1) % 10), other, y,
                           {GAIN: 0.10})
    assert "expected" not in {f.name for f in dataclasses.fields(AuditPart)}
    assert AuditResult.known_answers(_demo([part])) == {}  # an ordinary audit knows none
    demo = _demo([part])
    assert list(demo.known_answers()) == [part.id] == list(known_answers([part]))
    written = demo.to_dict()
    assert written["known_answers"] == demo.known_answers() and "expected" not in written["parts"][0]
    edited = json.loads(json.dumps(written, default=str))
    edited["known_answers"][part.id]["met"] = False  # a copy for readers: never believed
    back = read_saved_audit(json.dumps(edited))
    assert isinstance(back, DemoResult) and back.known_answers()[part.id]["met"] is True
    assert "<span class='answer met'>known answer found</span>" in audit_page(back)


def test_an_older_demo_file_with_expected_still_loads():
    """Before DemoResult, a demo's parts carried "expected": such a file reads as a DemoResult, the field ignored."""
    from fitaudit.report.saved import read_saved_audit

    rng = np.random.default_rng(2)
    y = rng.integers(0, 10, 800)
    other = np.where(rng.random(800) < 0.85, y, (y + 1) % 10)
    part = _agreement_part(PART_IDS["test"], np.where(rng.random(800) < 0.97, y, (y + 1) % 10), other, y,
                           {GAIN: 0.10})
    old = AuditResult(title="t", subject={}, parts=[part], settings={"out": "."}, environment={}, random_state=0,
                      seconds=0.0, created="now").to_dict()
    old["parts"][0]["expected"] = {"text": "edited", "met": False}
    text = json.dumps(old, default=str)
    plain = read_saved_audit(text)  # without the demo's hook: an ordinary audit, "expected" ignored
    assert type(plain) is AuditResult and plain.known_answers() == {}
    assert as_demo(json.loads(text))["type"] == "DemoResult" and as_demo({"type": "AuditResult"})["type"] == "AuditResult"
    demo = read_saved_audit(text, adapt=as_demo)
    assert isinstance(demo, DemoResult) and demo.known_answers()[part.id]["met"] is True


def test_torch_threads_are_given_back_and_the_demo_parts_run_on_fixed_ones(monkeypatch):
    """torch's thread count is global to a process: code that sets it must give it back, or everything that runs
    after it computes other numbers (the demo's answers changed with the tests run before it)."""
    torch = pytest.importorskip("torch")
    from fitaudit import InputError
    from fitaudit.demo import DEMO_TORCH_THREADS, _on_demo_threads
    from fitaudit.experiments.examine import images
    from fitaudit.models.training import torch_threads

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with pytest.raises(RuntimeError), torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError
        assert torch.get_num_threads() == 2
        with pytest.raises(InputError, match="`n`"), torch_threads(0):
            pass
        assert _on_demo_threads(torch.get_num_threads) == DEMO_TORCH_THREADS and torch.get_num_threads() == 2
        seen = []
        monkeypatch.setattr(images, "_train_digit_models", lambda *a, **k: seen.append(torch.get_num_threads()))
        images.train_digit_models(None, None, {}, None, random_state=0, progress=False)
        assert seen == [1] and torch.get_num_threads() == 2  # trained on one thread, the count given back
    finally:
        torch.set_num_threads(before)


def test_digit_cnns_are_trained_on_the_grids_shifts_when_asked(tmp_path, monkeypatch):
    """The demo's digit CNNs see the grid's translations in training (both of them), so that rotation is the one
    factor of the grid the plain CNN never saw; without ``translation`` the plain CNN's crops are untouched."""
    import types

    pytest.importorskip("torch")
    from scipy import ndimage

    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.experiments.examine import images
    from fitaudit.models import training

    seen = {}

    def fake_train(inputs, labels, *, checkpoint_dir, **_):
        seen[checkpoint_dir.name] = np.asarray(inputs)
        return types.SimpleNamespace(eval=lambda: None), types.SimpleNamespace(history=[{"train_accuracy": 1.0}])

    monkeypatch.setattr(training, "train_classifier", fake_train)
    from PIL import Image
    from sklearn.datasets import load_digits

    digits, train_dir = load_digits(), tmp_path / "train"
    for i in range(20):  # as images.digit_folders writes them, 20 of them
        (train_dir / str(digits.target[i])).mkdir(parents=True, exist_ok=True)
        pixels = np.pad(np.round(digits.images[i] / 16.0 * 255).astype(np.uint8), images.BORDER)
        Image.fromarray(pixels).resize((32, 32), Image.Resampling.BICUBIC).save(train_dir / str(digits.target[i])
                                                                                 / f"{i:04d}.png")
    pipeline = EvalPipeline(resize=20, crop=16)
    size = {"width": 8, "epochs": 1, "copies": 2, "crop": 16}
    plain = images.train_digit_models(train_dir, pipeline, size, tmp_path, random_state=0, progress=False)
    shifted = images.train_digit_models(train_dir, pipeline, size, tmp_path, random_state=0, progress=False, translation=0.1)
    assert set(seen) == {"digits-plain-16", "digits-rotation-augmented-16", "digits-plain-16-shifted0.1",
                         "digits-rotation-augmented-16-shifted0.1"}  # other checkpoints than the unshifted CNNs'

    def centres(batch):
        return np.array([ndimage.center_of_mass(image.sum(axis=0)) for image in batch])

    moved = centres(seen["digits-plain-16-shifted0.1"]) - centres(seen["digits-plain-16"])
    assert np.abs(moved).max() <= 0.1 * 16 + 0.5 and np.abs(moved).mean() > 0.3  # up to 1.6 px, and shifted
    both = centres(seen["digits-rotation-augmented-16-shifted0.1"]) - centres(seen["digits-rotation-augmented-16"])
    assert np.abs(both).mean() > 0.3  # the augmented CNN's rotated copies are shifted too
    assert "untouched" in plain["plain"][1]["description"] and "shifted" not in plain["plain"][1]["description"]
    for name in ("plain", "rotation-augmented"):
        assert "shifted uniformly by up to 0.1" in shifted[name][1]["description"]
        assert shifted[name][1]["settings"]["translation_augmentation"] == 0.1
