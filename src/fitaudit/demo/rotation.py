"""The demo's image examination with a known answer: CNNs with and without rotation augmentation.

The setting of ``fitaudit reproduce examiner-images``
(:mod:`fitaudit.experiments.examine.images`, docs/examiner.md#your-own-images): two
CNNs trained on scikit-learn's digits written as PNG folders and read
through the evaluation pipeline, one on the untouched crops, one on copies
rotated uniformly in [-30, 30] degrees; in the demo both crops are also
shifted by up to 10% of the side (``SETTINGS["digits_translation"]``), the
grid's translations, so that rotation is the one factor of the grid the
plain CNN never saw (trained on centred digits, both CNNs failed most at the
largest shifts, and the plain CNN's headline rule named a translation at
seeds 1-3 of the quick demo); each is examined on correctly
classified test digits by the exact grid of Engstrom et al. (ICML 2019:
31 rotations x 5 x 5 translations, 775 queries per image). Known answer:
the augmented CNN is more robust to rotation (higher worst-case accuracy
over the grid's 31 rotations without translation); the plain CNN's
accuracy falls with rotation (by more than :data:`ROTATION_DROP` from
|rotation| <= 10 to >= 20 degrees, translations 0) and its headline
weakness rule names rotation. Only the plain CNN's part carries the t-SNE
picture (it costs seconds).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fitaudit.auditing.parts import examination_part
from fitaudit.auditing.result import AuditPart
from fitaudit.examine.decision import EXAMINE_TOLERANCE

#: the two CNNs, in the order of their parts
MODELS = ("plain", "rotation-augmented")
#: the plain CNN's accuracy must fall by more than this from small to large rotations (the known answer)
ROTATION_DROP = 0.1
#: test digits examined per CNN, by demo mode (the training sizes are the reproduction's quick ones)
INSTANCES = {"quick": 20, "default": 30}


class RotationPair:
    """The two digit CNNs and their grid examinations (computed once, on first use; models checkpointed).

    Parameters
    ----------
    mode : str
        The demo's mode (``"quick"`` or ``"default"``): :data:`INSTANCES`.
    random_state : int
    folder : Path
        Digit folders, models and query logs go here.
    progress : bool
    translation : float
        Both CNNs are trained on copies shifted by up to this fraction of the side (the grid's translations
        reach 0.1), so that the grid's rotations are the one factor the plain CNN never saw
        (:func:`~fitaudit.experiments.examine.images.train_digit_models`).
    device : str
        Torch device the CNNs train and are examined on.
    """

    def __init__(self, mode: str, random_state: int, folder: Path, progress: bool, translation: float = 0.0,
                 device: str = "cpu") -> None:
        self.mode, self.random_state, self.folder, self.progress = mode, random_state, folder, progress
        self.translation, self.device = translation, device

    @functools.cached_property
    def examined(self) -> dict[str, Any]:
        """Per model: ``(grid result, scenario, training summary)``."""
        from fitaudit.data.pipeline import EvalPipeline
        from fitaudit.experiments.examine.images import (
            SIZES,
            digit_folders,
            examine_model,
            train_digit_models,
        )
        from fitaudit.models import as_classifier

        size = {**SIZES["quick"], "instances": INSTANCES[self.mode]}
        train_dir, test_dir = digit_folders(self.folder / "digits-png", n_train=size["n_train"])
        pipeline = EvalPipeline(resize=size["resize"], crop=size["crop"])
        trained = train_digit_models(train_dir, pipeline, size, self.folder, random_state=self.random_state, progress=self.progress,
                                     translation=self.translation, device=self.device)
        out = {}
        for name, (module, summary) in trained.items():
            grid, _, scenario = examine_model(as_classifier(module, batch_size=1024, device=self.device), test_dir,
                                              pipeline, size, [], random_state=self.random_state, checkpoint_dir=None,
                                              progress=self.progress, device=self.device)
            out[name] = (grid, scenario, summary)
        return out

    def _training(self, name: str) -> str:
        shifts = f"shifted by up to {self.translation:.0%} of the side" if self.translation > 0 else ""
        if name == MODELS[0]:
            return f"on digits {shifts}, never rotated" if shifts else "on untouched digits"
        return "with rotations in [-30, 30] degrees" + (f", {shifts}" if shifts else "")

    def rotation_accuracy(self, name: str) -> float:
        """Worst-case accuracy of CNN ``name`` over the grid's 31 rotations without translation."""
        from fitaudit.experiments.examine.images import rotation_only_broken

        return float(1.0 - rotation_only_broken(self.examined[name][0]).mean())

    def part(self, name: str) -> AuditPart:
        """The examination part of CNN ``name`` (one of :data:`MODELS`); its known answer: :func:`rotation_known_answers`."""
        from fitaudit.experiments.examine.images import rotation_profile

        grid, scenario, summary = self.examined[name]
        grid.space_check = scenario.check_space(grid)
        part = examination_part(
            grid, scenario.generator.for_display(), tolerance=EXAMINE_TOLERANCE, part_id=f"examine-digits-{name}",
            title=f"Adversarial examiner on image folders: a digit CNN trained {self._training(name)}",
            queries_path=self.folder / f"examine-digits-{name}-queries.npz", embedding=name == MODELS[0],
            settings={"group": "digits", "label": f"{name} CNN", "training": summary,
                      "generator": "image transforms", "border": scenario.generator.border,
                      "group_title": "Digit CNNs with and without rotation augmentation, examined by the exact "
                                     "grid (31 rotations x 5 x 5 translations per image)"},
        )
        profile = rotation_profile(grid)
        worst, small, large = _number_names()
        part.numbers.update({worst: self.rotation_accuracy(name), small: profile["small"], large: profile["large"]})
        return part


def _number_names() -> tuple[str, str, str]:
    """Names of a digit part's rotation numbers: worst case over the rotations, accuracy at small and large ones."""
    from fitaudit.experiments.examine.images import LARGE_ROTATION, SMALL_ROTATION

    return ("worst-case accuracy over the 31 rotations (no translation)",
            f"accuracy at |rotation| <= {SMALL_ROTATION:g} (grid, no translation)",
            f"accuracy at |rotation| >= {LARGE_ROTATION:g} (grid, no translation)")


def rotation_known_answers(by_id: dict[str, AuditPart]) -> dict[str, dict[str, Any]]:
    """The known answers of the two digit CNNs' parts, from their numbers and weakness rules alone.

    The plain CNN: its accuracy falls with rotation by more than
    :data:`ROTATION_DROP` and its headline weakness rule names rotation; the
    rotation-augmented CNN: a higher worst-case accuracy over the 31
    rotations than the plain one. ``{part id: {"text", "met"}}`` for the
    parts present with a result (recomputed when a saved report is rebuilt).
    """
    from fitaudit.experiments.examine.images import LARGE_ROTATION, SMALL_ROTATION

    worst, small, large = _number_names()
    plain = by_id.get(f"examine-digits-{MODELS[0]}")
    augmented = by_id.get(f"examine-digits-{MODELS[1]}")
    answers: dict[str, dict[str, Any]] = {}
    if plain is None or plain.result is None:
        return answers
    weakness = getattr(plain.result, "weakness", None)
    headline = weakness.headline if weakness is not None else None
    named = headline is not None and any(c[0] == "rotation" for c in headline["conditions"])
    numbers = plain.numbers
    answers[plain.id] = {
        "text": f"its accuracy falls with rotation by more than {ROTATION_DROP * 100:.0f} percentage points (|rotation| >= "
                f"{LARGE_ROTATION:g}: {numbers[large]:.0%} vs <= {SMALL_ROTATION:g}: {numbers[small]:.0%}) "
                "and its headline weakness rule names rotation ("
                + (headline["text"].split(":")[0] if headline is not None else "no confirmed rule") + ")",
        "met": bool(named and numbers[large] < numbers[small] - ROTATION_DROP)}
    if augmented is not None and augmented.result is not None:
        mine, theirs = augmented.numbers[worst], numbers[worst]
        answers[augmented.id] = {"text": "more robust to rotation than the plain CNN: worst-case accuracy over the 31 "
                                         f"rotations {mine:.0%} vs {theirs:.0%}", "met": bool(mine > theirs)}
    return answers
