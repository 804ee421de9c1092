"""The audit's questions: the one list :data:`CHECKS`, in report order.

Each entry is a :class:`~fitaudit.auditing.check.Check`; :func:`fitaudit.audit`
plans every check of the chosen instruments on its validated inputs
(:func:`fitaudit.auditing.runner.plan`). A question that cannot be answered
is skipped with its reason and never stops the others. Adding a question is
adding one check here (``docs/developer.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit.auditing.check import Check
from fitaudit.auditing.first import INSTRUMENT, TITLES, accuracy_part, agreement_part, leakage_parts
from fitaudit.auditing.inputs import AuditInputs
from fitaudit.auditing.parts import (
    examine_part,
    folder_examine_part,
    image_examine_part,
    is_image_data,
    nmodel_images_part,
    nmodel_part,
    overfit_images_part,
    overfit_part,
    pgdl_part,
    pmv_part,
)
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.runner import PartSpec, skipped


class AccuracyCheck(Check):
    """How precise is the measured accuracy: k/n with its exact interval, overall and per class."""

    id, instrument, title = "accuracy", INSTRUMENT, TITLES["accuracy"]

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        return [accuracy_part(inputs.adapter, inputs.model_key, data=inputs.test, inputs_of=inputs.inputs_of,
                              pictures=inputs.pictures, labels=inputs.labels,
                              normalisation=inputs.normalisation)]


class LeakageCheck(Check):
    """Exact and near twins of training examples among the scored ones (and, for torch, in its features)."""

    id, instrument, title = "leakage", INSTRUMENT, TITLES["leakage"]
    part_ids = ("leakage", "leakage-penult")

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        return leakage_parts(inputs.adapter, inputs.model_key, data=inputs.test, train=inputs.train,
                             inputs_of=inputs.inputs_of, pictures=inputs.pictures,
                             random_state=inputs.settings["random_state"], progress=inputs.progress,
                             checkpoint_dir=inputs.folder / "leakage-blocks", labels=inputs.labels)


class AgreementCheck(Check):
    """Does another run of the training agree with the audited one (label-free accuracy estimate)."""

    id, instrument, title = "agreement", INSTRUMENT, TITLES["agreement"]

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        from fitaudit.models.fingerprint import evaluation_fingerprint

        keys = [evaluation_fingerprint(m) for m in inputs.models[:1]]
        others = [inputs.other(m) for m in inputs.models[:1]] + inputs.models[1:]  # normalised as the audited model
        return [agreement_part(inputs.adapter, inputs.model_key, others, keys, data=inputs.test,
                               inputs_of=inputs.inputs_of, pictures=inputs.pictures, load=inputs.load)]


class OverfitCheck(Check):
    """The overfitting test (Werpachowski et al. 2019) on the scored data and, side by side, the training data."""

    id, instrument, title = "overfit-test", "overfit", "Overfitting test on the scored data"
    part_ids = ("overfit-test", "overfit-train")
    skip_code = "no_aeg"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.pictures is not None:
            return inputs.pictures.no_eps
        if inputs.test is not None and inputs.aeg is None:
            return str(inputs.no_aeg or "no AEG applies to these data.")
        return None

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        reason = self.applies(inputs)
        if reason is not None and inputs.pictures is not None:  # skipped under the images' title
            return [skipped(self.id, self.instrument, self.title.replace("data", "images"), reason, self.skip_code)]
        return super().plan(inputs)

    def parts(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        delta, pictures = inputs.settings["delta"], inputs.pictures
        specs: list[PartSpec | AuditPart] = []
        if pictures is not None:
            for part_id, role, data in (("overfit-test", "test", pictures.test), ("overfit-train", "train",
                                                                                   pictures.train)):
                if data is not None:
                    title = f"Overfitting test on the {'scored' if role == 'test' else 'training'} images"
                    specs.append(overfit_images_part(
                        part_id, title, inputs.adapter, inputs.model_key, data, pictures.pipeline, role=role,
                        eps=pictures.eps, delta=delta, checkpoint_dir=inputs.folder / f"{part_id}-batches",
                        progress=inputs.progress))
            return specs
        assert inputs.test is not None
        specs.append(overfit_part("overfit-test", self.title, inputs.adapter, inputs.model_key, inputs.test,
                                  inputs.aeg, role="test", delta=delta))
        if inputs.train is not None:
            specs.append(overfit_part("overfit-train", "Overfitting test on the training data", inputs.adapter,
                                      inputs.model_key, inputs.train, inputs.aeg, role="train", delta=delta))
        return specs


class NModelCheck(Check):
    """The N-model test over the audited model and the other runs of its training (``models=``)."""

    id, instrument, title = "overfit-nmodel", "overfit", "N-model test"

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        if not inputs.models or OverfitCheck().applies(inputs) is not None:
            return []  # the question does not arise (one run), or the overfitting test's reason says it all
        runs, keys = inputs.runs()
        delta, pictures = inputs.settings["delta"], inputs.pictures
        if pictures is not None:
            return [nmodel_images_part(runs, keys, pictures.test, pictures.pipeline, eps=pictures.eps, delta=delta,
                                       checkpoint_dir=inputs.folder / "overfit-nmodel-batches",
                                       progress=inputs.progress)]
        assert inputs.test is not None
        return [nmodel_part(runs, keys, inputs.test, inputs.aeg, delta=delta)]


class ExamineCheck(Check):
    """The adversarial examiner (Shu et al. 2020): over a generator's factors, or the images under transforms."""

    id, instrument, title = "examine", "examine", "Adversarial examination over the input factors"
    skip_code = "no_generator"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.generator is not None or inputs.pictures is not None or (
                inputs.test is not None and is_image_data(inputs.test)):
            return None
        return ("the examiner needs a generator of inputs from factors (`generator=`, e.g. ShapesGenerator), "
                "or image data in [0, 1] (n, 1 or 3, H, W) or image folders to examine under image transforms.")

    def parts(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        options: dict[str, Any] = {
            "examiner": inputs.settings["examiner"], "steps": inputs.settings["examine_steps"],
            "random_state": inputs.settings["random_state"], "n_jobs": inputs.settings["n_jobs"],
            "folder": inputs.folder, "keep_queries": inputs.kept, "progress": inputs.progress}
        if inputs.generator is not None:
            return [examine_part(inputs.adapter, inputs.model_key, inputs.generator, **options)]
        device = str(inputs.load.get("device", "cpu"))  # where the image transforms are made
        if inputs.pictures is not None:
            return [folder_examine_part(inputs.adapter, inputs.model_key, inputs.pictures, device=device, **options)]
        assert inputs.test is not None
        return [image_examine_part(inputs.adapter, inputs.model_key, inputs.test, device=device, **options)]


class PgdlCheck(Check):
    """Which generalization measures predict the gap on a population of models (Jiang et al. 2020)."""

    id, instrument, title = "pgdl", "pgdl", "Generalization measures on a population of models"
    skip_code = "no_task"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.task is None:
            return "the generalization measures need a population of trained models (`task=`: a PGDL task folder)."
        return None

    def parts(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        return [pgdl_part(inputs.task, random_state=inputs.settings["random_state"], n_jobs=inputs.settings["n_jobs"],
                          folder=inputs.folder, progress=inputs.progress, trust_code=inputs.load["trust_code"])]


class PmvCheck(Check):
    """Perturbed model validation (Zhang et al. 2019) of the learner on the training data."""

    id, instrument, title = "pmv", "pmv", "Perturbed model validation of the learner"
    skip_code = "no_learner"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.learner is None or inputs.train is None:
            return ("PMV needs a scikit-learn learner to retrain (`learner=`, or a .skops model) "
                    "and the training data (`train_data`).")
        return None

    def parts(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        from fitaudit.checkpoint import fingerprint

        assert inputs.train is not None
        return [pmv_part(inputs.learner, fingerprint(inputs.learner), inputs.train,
                         threshold=inputs.settings["pmv_threshold"], random_state=inputs.settings["random_state"],
                         n_jobs=inputs.settings["n_jobs"], checkpoint_dir=inputs.folder / "pmv-fits",
                         progress=inputs.progress)]


#: the audit's questions, in report order: the first questions, then the four instruments
CHECKS: tuple[Check, ...] = (AccuracyCheck(), LeakageCheck(), AgreementCheck(), OverfitCheck(), NModelCheck(),
                             ExamineCheck(), PgdlCheck(), PmvCheck())


def check_fail_on(names: Sequence[str], checks: Sequence[Check] = CHECKS) -> list[str]:
    """``names`` (``--fail-on``) checked against the instruments and every part id of ``checks``, before any work.

    A misspelt name is refused at once, so a call that cannot honour it never
    runs the audit, let alone replaces an earlier report.
    """
    from fitaudit.auditing.result import INSTRUMENTS

    known = list(dict.fromkeys([*INSTRUMENTS, *(check.instrument for check in checks),
                                *(part_id for check in checks for part_id in check.part_ids)]))
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(f"`fail_on` names {', '.join(map(repr, unknown))}, which is not an instrument or part; "
                         f"use some of {', '.join(known)}.")
    return list(names)
