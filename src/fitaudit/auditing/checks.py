"""The audit's questions: the one list :data:`CHECKS`, in report order.

Each entry is a :class:`~fitaudit.auditing.check.Check` answering with one
part: :meth:`~fitaudit.auditing.check.Check.applies` (can it be answered
here, else why not), :meth:`~fitaudit.auditing.check.Check.key` (what the
answer depends on) and :meth:`~fitaudit.auditing.check.Check.run` (the
answer), the way a new check is written (``docs/developer.md``). A question
that does not arise on the inputs (the test on the training data when there
is none) plans nothing (:meth:`~fitaudit.auditing.check.Check.arises`);
one that cannot be answered is skipped with its reason and never stops the
others. :func:`fitaudit.audit` plans every check of the chosen instruments
on its validated inputs (:func:`fitaudit.auditing.runner.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit.auditing.check import Check
from fitaudit.auditing.first import (
    INSTRUMENT,
    TITLES,
    accuracy_key,
    agreement_key,
    first_question_specs,
    has_training_data,
    leakage_key,
    no_other_run,
    no_penultimate_features,
    no_training_data,
    penultimate_arises,
    run_accuracy,
    run_agreement,
    run_leakage,
    run_penultimate_leakage,
)
from fitaudit.auditing.inputs import AuditInputs, Dataset
from fitaudit.auditing.parts import (
    EXAMINE_TOLERANCE,
    IMAGE_INSTANCES,
    PGDL_MEASURES,
    image_examination_title,
    is_image_data,
    moves_key,
    overfit_images_key,
    overfit_key,
    pgdl_key,
    run_examination,
    run_image_examination,
    run_nmodel,
    run_nmodel_images,
    run_overfit,
    run_overfit_images,
    run_pgdl,
    run_pmv,
    transforms_fingerprint,
)
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.runner import PartSpec
from fitaudit.auditing.slice_label_checks import LabelCheck, SliceCheck
from fitaudit.auditing.table_checks import TABLE_CHECKS
from fitaudit.checkpoint import CheckpointStore


class AccuracyCheck(Check):
    """How precise is the measured accuracy: k/n with its exact interval, overall and per class."""

    id, instrument, title = "accuracy", INSTRUMENT, TITLES["accuracy"]

    def key(self, inputs: AuditInputs) -> Any:
        return accuracy_key(inputs.adapter, inputs.model_key, data=inputs.test, pictures=inputs.pictures)

    def run(self, inputs: AuditInputs) -> AuditPart:
        return run_accuracy(inputs.adapter, data=inputs.test, inputs_of=inputs.inputs_of, pictures=inputs.pictures,
                            labels=inputs.labels,
                            predictions=None if inputs.test is None else inputs.scored_predictions())


class LeakageCheck(Check):
    """Exact and near twins of training examples among the scored ones."""

    id, instrument, title = "leakage", INSTRUMENT, TITLES["leakage"]

    def applies(self, inputs: AuditInputs) -> str | None:
        return None if has_training_data(inputs.train, inputs.pictures) else no_training_data(inputs.names)

    def key(self, inputs: AuditInputs) -> Any:
        return leakage_key(inputs.model_key, data=inputs.test, train=inputs.train, pictures=inputs.pictures,
                           random_state=inputs.settings["random_state"])

    def run(self, inputs: AuditInputs) -> AuditPart:
        return run_leakage(inputs.adapter, inputs.model_key, data=inputs.test, train=inputs.train,
                           inputs_of=inputs.inputs_of, pictures=inputs.pictures,
                           random_state=inputs.settings["random_state"], progress=inputs.progress,
                           checkpoint_dir=inputs.folder / "leakage-blocks", labels=inputs.labels)


class PenultimateLeakageCheck(Check):
    """The same search in a torch model's penultimate features: twins the model itself cannot tell apart."""

    id, instrument, title = "leakage-penult", INSTRUMENT, TITLES["leakage-penult"]
    skip_code = "no_penultimate_features"

    def arises(self, inputs: AuditInputs) -> bool:
        return has_training_data(inputs.train, inputs.pictures) and penultimate_arises(inputs.adapter,
                                                                                        inputs.pictures)

    def applies(self, inputs: AuditInputs) -> str | None:
        return no_penultimate_features(inputs.adapter, inputs.test)

    key = LeakageCheck.key  # the same search inputs: the part is rerun when the leakage part would be

    def run(self, inputs: AuditInputs) -> AuditPart:
        assert inputs.test is not None and inputs.train is not None
        return run_penultimate_leakage(inputs.adapter, data=inputs.test, train=inputs.train,
                                       inputs_of=inputs.inputs_of, random_state=inputs.settings["random_state"])


class AgreementCheck(Check):
    """Does another run of the training agree with the audited one (label-free accuracy estimate)."""

    id, instrument, title = "agreement", INSTRUMENT, TITLES["agreement"]

    def applies(self, inputs: AuditInputs) -> str | None:
        if not inputs.models:
            return no_other_run(inputs.names)
        inputs.other_run(0)  # another training's classes: an error, before any part runs
        return None

    def key(self, inputs: AuditInputs) -> Any:
        return agreement_key(inputs.model_key, inputs.run_keys()[1], data=inputs.test, pictures=inputs.pictures)

    def run(self, inputs: AuditInputs) -> AuditPart:
        return run_agreement(inputs.adapter, inputs.other_run(0), runs_given=len(inputs.models), data=inputs.test,
                             inputs_of=inputs.inputs_of, pictures=inputs.pictures)


class OverfitTestCheck(Check):
    """The overfitting test (Werpachowski et al. 2019) on the scored data (arrays with an AEG, or image folders)."""

    id, instrument, title = "overfit-test", "overfit", "Overfitting test on the scored data"
    skip_code = "no_aeg"
    #: the data the test is run on (``"test"``: the scored data; ``"train"``: its power control)
    role = "test"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.pictures is not None:
            return inputs.pictures.no_eps
        if inputs.test is not None and inputs.aeg is None:
            return str(inputs.no_aeg or "no AEG applies to these data.")
        return None

    def part_title(self, inputs: AuditInputs) -> str:
        title = self.title.replace("data", "images") if inputs.pictures is not None else self.title
        return title.replace("scored", "training") if self.role == "train" else title

    def _data(self, inputs: AuditInputs) -> Any:
        if inputs.pictures is not None:
            return inputs.pictures.test if self.role == "test" else inputs.pictures.train
        return inputs.test if self.role == "test" else inputs.train

    def key(self, inputs: AuditInputs) -> Any:
        delta, pictures = inputs.settings["delta"], inputs.pictures
        if pictures is not None:
            return overfit_images_key(inputs.model_key, self._data(inputs), pictures.pipeline, role=self.role,
                                      eps=pictures.eps, delta=delta, stride=pictures.stride, mirror=pictures.mirror)
        return overfit_key(inputs.model_key, self._data(inputs), inputs.aeg, role=self.role, delta=delta)

    def run(self, inputs: AuditInputs) -> AuditPart:
        delta, pictures = inputs.settings["delta"], inputs.pictures
        if pictures is not None:
            return run_overfit_images(self.id, self.part_title(inputs), inputs.adapter, inputs.model_key,
                                      self._data(inputs), pictures.pipeline, role=self.role, eps=pictures.eps,
                                      delta=delta, checkpoint_dir=inputs.folder / f"{self.id}-batches",
                                      progress=inputs.progress, stride=pictures.stride, mirror=pictures.mirror)
        return run_overfit(self.id, self.part_title(inputs), inputs.adapter, self._data(inputs), inputs.aeg,
                           role=self.role, delta=delta)


class OverfitTrainCheck(OverfitTestCheck):
    """The same test on the training data, side by side: its power control (a test that cannot reject
    training data cannot clear the scored data either)."""

    id, title = "overfit-train", "Overfitting test on the training data"
    role = "train"

    def arises(self, inputs: AuditInputs) -> bool:
        return self._data(inputs) is not None and OverfitTestCheck().applies(inputs) is None


class NModelCheck(Check):
    """The N-model test over the audited model and the other runs of its training (``models=``)."""

    id, instrument, title = "overfit-nmodel", "overfit", "N-model test"

    def arises(self, inputs: AuditInputs) -> bool:
        # one run: the question does not arise; no AEG: the overfitting test's reason says it all
        return bool(inputs.models) and OverfitTestCheck().applies(inputs) is None

    def key(self, inputs: AuditInputs) -> Any:
        keys = inputs.run_keys()
        delta, pictures = inputs.settings["delta"], inputs.pictures
        if pictures is not None:
            return (keys, pictures.test.fingerprint(), pictures.pipeline, pictures.eps, delta,
                    *moves_key(pictures.stride, pictures.mirror))
        assert inputs.test is not None
        return keys, inputs.test.x, inputs.test.y, inputs.aeg, delta

    def run(self, inputs: AuditInputs) -> AuditPart:
        runs, keys = inputs.runs(), inputs.run_keys()
        delta, pictures = inputs.settings["delta"], inputs.pictures
        if pictures is not None:
            return run_nmodel_images(runs, keys, pictures.test, pictures.pipeline, eps=pictures.eps, delta=delta,
                                     checkpoint_dir=inputs.folder / "overfit-nmodel-batches",
                                     progress=inputs.progress, stride=pictures.stride, mirror=pictures.mirror)
        assert inputs.test is not None
        return run_nmodel(runs, inputs.test, inputs.aeg, delta=delta)


class ExamineCheck(Check):
    """The adversarial examiner (Shu et al. 2020): over a generator's factors, or the images under transforms."""

    id, instrument, title = "examine", "examine", "Adversarial examination over the input factors"
    skip_code = "no_generator"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.generator is not None or inputs.pictures is not None or (
                inputs.test is not None and is_image_data(inputs.test)):
            return None
        return (f"the examiner needs a generator of inputs from factors ({inputs.named('generator')}), "
                "or image data in [0, 1] (n, 1 or 3, H, W) or image folders to examine under image transforms.")

    def key(self, inputs: AuditInputs) -> Any:
        settings = inputs.settings
        common = (settings["examiner"], settings["examine_steps"], settings.get("factors"))
        if inputs.generator is not None:
            return (inputs.model_key, inputs.generator, *common, None, EXAMINE_TOLERANCE, settings["random_state"])
        data: tuple[Any, ...]
        if inputs.pictures is not None:
            data = (inputs.pictures.test.fingerprint(), inputs.pictures.pipeline.to_dict())
        else:
            assert inputs.test is not None
            data = (inputs.test.x, inputs.test.y, inputs.test.margin)
        return (inputs.model_key, *data, *common, IMAGE_INSTANCES, EXAMINE_TOLERANCE, settings["random_state"],
                transforms_fingerprint())

    def part_title(self, inputs: AuditInputs) -> str:
        return self.title if inputs.generator is not None else image_examination_title(inputs.settings.get("factors"))

    def run(self, inputs: AuditInputs) -> AuditPart:
        kind = "examine" if inputs.generator is not None else (
            "examine-folder" if inputs.pictures is not None else "examine-images")
        stored = CheckpointStore.key(kind, self.key(inputs))  # the examiner's checkpoints and query log
        options: dict[str, Any] = {
            "examiner": inputs.settings["examiner"], "steps": inputs.settings["examine_steps"],
            "tolerance": EXAMINE_TOLERANCE, "random_state": inputs.settings["random_state"],
            "n_jobs": inputs.settings["n_jobs"], "folder": inputs.folder, "keep_queries": inputs.kept,
            "progress": inputs.progress, "factors": inputs.settings.get("factors")}
        if inputs.generator is not None:
            return run_examination(inputs.adapter, inputs.generator, stored, **options)
        device = str(inputs.load.get("device", "cpu"))  # where the image transforms are made
        return run_image_examination(inputs.adapter, stored, data=inputs.test, pictures=inputs.pictures,
                                     instances=IMAGE_INSTANCES, device=device, **options)



class PgdlCheck(Check):
    """Which generalization measures predict the gap on a population of models (Jiang et al. 2020)."""

    id, instrument, title = "pgdl", "pgdl", "Generalization measures on a population of models"
    skip_code = "no_task"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.task is None:
            return (f"the generalization measures need a population of trained models ({inputs.named('task')}: "
                    "a PGDL task folder).")
        return None

    def key(self, inputs: AuditInputs) -> Any:
        return pgdl_key(inputs.task, PGDL_MEASURES, inputs.settings["random_state"])

    def run(self, inputs: AuditInputs) -> AuditPart:
        return run_pgdl(inputs.task, random_state=inputs.settings["random_state"],
                        n_jobs=inputs.settings["n_jobs"], folder=inputs.folder, progress=inputs.progress)


class PmvCheck(Check):
    """Perturbed model validation (Zhang et al. 2019) of the learner on the training data."""

    id, instrument, title = "pmv", "pmv", "Perturbed model validation of the learner"
    skip_code = "no_learner"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.learner is None or inputs.train is None:
            return (f"PMV needs a scikit-learn learner to retrain ({inputs.named('learner')}, or a .skops model) "
                    f"and the training data ({inputs.named('train_data')}).")
        return None

    def key(self, inputs: AuditInputs) -> Any:
        from fitaudit.checkpoint import fingerprint

        assert inputs.train is not None
        return (fingerprint(inputs.learner), *inputs.train.key(), inputs.settings["pmv_threshold"],
                inputs.settings["random_state"])

    def run(self, inputs: AuditInputs) -> AuditPart:
        assert inputs.train is not None
        return run_pmv(inputs.learner, inputs.train, threshold=inputs.settings["pmv_threshold"],
                       random_state=inputs.settings["random_state"], n_jobs=inputs.settings["n_jobs"],
                       checkpoint_dir=inputs.folder / "pmv-fits", progress=inputs.progress)


#: the questions of the scored rows after the accuracy (issue 48): better than a baseline, calibrated
#: probabilities, weak slices, label problems; first questions, asked by ``fitaudit inspect`` too
#: (:func:`first_questions`)
SCORED_CHECKS: tuple[Check, ...] = (*TABLE_CHECKS, SliceCheck(), LabelCheck())

#: the audit's questions, in report order: the first questions, then the four instruments
CHECKS: tuple[Check, ...] = (AccuracyCheck(), *SCORED_CHECKS, LeakageCheck(), PenultimateLeakageCheck(),
                             AgreementCheck(), OverfitTestCheck(), OverfitTrainCheck(), NModelCheck(), ExamineCheck(),
                             PgdlCheck(), PmvCheck())


def first_questions(adapter: Any, *, test: Dataset | None = None, train: Dataset | None = None, pictures: Any = None,
                    models: Sequence[Any] | None = None, random_state: Any = 0,
                    progress: bool = False, labels: Any = None, normalisation: str | None = None,
                    names: Mapping[str, str] | None = None) -> list[AuditPart]:
    """The first questions computed at once, outside an audit (``fitaudit inspect``): the same parts, no store.

    ``test``/``train`` are arrays (:class:`~fitaudit.auditing.inputs.Dataset`,
    inputs as the model takes them) or ``pictures`` image folders
    (:class:`~fitaudit.auditing.images.ImageInputs`); ``models`` other runs
    of the same training (the agreement); ``names`` what the caller calls the
    arguments (:func:`fitaudit._names.named`: the command line's options).
    The accuracy (:class:`AccuracyCheck`) comes first, then the audit's checks of the scored rows
    (:data:`SCORED_CHECKS`: baseline, calibration,
    weak slices, label problems), each skipped with its reason where it
    cannot run, as in an audit (``labels``: the model's label convention and
    ``normalisation``: where image arrays' mean and std came from, both named
    by the baseline part when the accuracy is at chance).
    """
    inputs = AuditInputs(adapter=adapter, model_key="inspect", test=test, train=train, pictures=pictures,
                         models=list(models or []), generator=None, task=None, learner=None, aeg=None, no_aeg=None,
                         inputs_of=lambda x: x, settings={"random_state": random_state}, folder=None,
                         progress=progress, load={}, labels=labels, normalisation=normalisation, names=names)
    specs = first_question_specs(adapter, "inspect", test=test, train=train, pictures=pictures, models=models,
                                 random_state=random_state, progress=progress, other_run=inputs.other_run,
                                 labels=labels, names=names)
    scored = [spec for check in (AccuracyCheck(), *SCORED_CHECKS) for spec in check.plan(inputs)]
    return [spec.compute() if isinstance(spec, PartSpec) else spec for spec in [*scored, *specs]]


def check_fail_on(names: Sequence[str], checks: Sequence[Check] = CHECKS) -> list[str]:
    """``names`` (``--fail-on``) checked against the instruments and every part id of ``checks``, before any work.

    A misspelt name is refused at once, so a call that cannot honour it never
    runs the audit, let alone replaces an earlier report.
    """
    from fitaudit.auditing.result import INSTRUMENTS

    known = list(dict.fromkeys([*INSTRUMENTS, *(check.instrument for check in checks),
                                *(check.id for check in checks)]))
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(f"`fail_on` names {', '.join(map(repr, unknown))}, which is not an instrument or part; "
                         f"use some of {', '.join(known)}.")
    return list(names)
