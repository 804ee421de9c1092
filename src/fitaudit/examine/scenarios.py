"""What to examine: the Shapes scenario and a user's own images (docs/examiner.md#your-own-images).

A scenario is a generator, the instances to examine and, where the model's
accuracy on untouched inputs is known, the check that the factor space is
not foreign to the model:

* :func:`shapes_scenario` -- held-out Shapes objects of the model's classes,
  taken class by class in turn; :func:`shapes_space_check` compares the
  model's accuracy on test renders of its own training distribution with its
  accuracy under the examined space's random factors;
* :func:`image_scenario` -- a user's labelled images (an array of images or
  canvases, or an :class:`~fitaudit.data.images.ImageDataset` with its
  :class:`~fitaudit.data.pipeline.EvalPipeline`) under the image-transform
  generator (:mod:`fitaudit.data.transforms`); the instances are a sample of
  images the model classifies correctly, several per class (Shu et al. pick
  confident ones), and the space check (:meth:`Scenario.check_space`) compares
  their accuracy untouched (1, by this choice) with their accuracy under the
  examination's own uniform random reference queries, so that one
  random-factor accuracy serves the verdict and the space check alike.

When accuracy under random factors is far below accuracy on untouched
inputs (by more than :data:`FOREIGN_DROP`), the examiner's failures may
belong to the space (transformations the model was never meant to meet)
rather than to the model; the check records both numbers for the verdict.

A user's images are screened factor by factor first (:func:`factor_screen`):
on up to :data:`SCREEN_IMAGES` scanned images the model classifies
correctly untouched (several per class; more than the examined ones, so that
the screen speaks of the model rather than of a few dozen images), every factor
with a range is drawn alone (:data:`SCREEN_DRAWS` values per image,
stratified over its range, the others at their defaults).
Random draws of all the factors at once compound small costs (an ordinary
CNN on real photos that keeps 84-99% of its correct answers under each
default factor alone keeps about 61% under all of them:
``benchmarks/validity/results/photo_space.txt``), so the question whether
the space is one the model can be expected to withstand is asked of each
factor alone: a factor is foreign when alone, far from its default (the
draws beyond :func:`factor_split`), it costs more than
:data:`FOREIGN_FACTOR_DROP` of the screened images' accuracy (1, by their
choice): more than half of the model's correct answers are lost. That bar
is calibrated on the photo world
(``benchmarks/validity/results/photo_examine.txt`` as of commit 10f094e): an ordinary CNN trained
with the usual augmentation (seed 0: clean accuracy 0.535 on the unseen
crops) loses at most 0.40 of them alone (blur beyond 0.4 px), and no default
factor is left out, while all the factors at once cost it 0.50.
A foreign factor of the default space (one the caller did not set, such as
a horizontal flip of digits) is left out (fixed at its identity) and the
examination goes on over the rest; the space check then records the factor
and its numbers (``left_out``). This is also how the default space decides
whether the classes allow a horizontal flip: where the model keeps at least
half of its correct answers under a flip (the far half of ``flip``'s draws),
the flip is examined; a digit or a letter is not its mirror image, and a
model of them loses more. A factor the caller set is examined as
set: when it is foreign, the space is (``foreign``, and the verdict names
it). Without a screen (the Shapes scenario) the space is foreign when all
the factors at once cost more than :data:`FOREIGN_DROP`.

The check also says which factor costs most among the random queries (:func:`factor_drops`):
the random queries are split, factor by factor, into those that drew the
factor near its default (within half its largest distance from the default
in the examined range) and those that drew it far; the factor whose far
queries lose the most accuracy against its near ones is named. The random
queries draw every factor independently and uniformly, so each contrast is
the factor's average effect with the others random (a main effect in the
sense of a randomised factorial design [1]_; Engstrom et al. [2]_ compare
rotations and translations alone and together the same way).

References
----------
.. [1] Box, G. E. P., Hunter, J. S., Hunter, W. G. (2005). *Statistics for
   Experimenters*, 2nd ed., ch. 5 (main effects of two-level factorial designs). Wiley.
.. [2] Engstrom, L., Tran, B., Tsipras, D., Schmidt, L., Madry, A. (2019).
   Exploring the landscape of spatial robustness. ICML.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.random import check_random_state

#: accuracy under random factors this far (absolute) below accuracy on untouched inputs: a foreign space
FOREIGN_DROP = 0.25
#: where the factors were screened (:func:`factor_screen`): one factor alone, far from its default, this far
#: below the accuracy untouched (more than half of the correct answers lost): a foreign factor
FOREIGN_FACTOR_DROP = 0.5

#: correctly classified images (of the scan, several per class) the per-factor screen draws each factor alone on
SCREEN_IMAGES = 96
#: values of each factor alone per screened image (stratified over the factor's range)
SCREEN_DRAWS = 4


@dataclasses.dataclass
class Scenario:
    """A generator, the instances to examine and the space check.

    Attributes
    ----------
    generator : Generator
    instances : ndarray of int
        Generator indices of the instances to examine.
    sources : list of str or None
        Where each generator instance came from (image files), when known.
    scan : dict or None
        Images scanned untouched to choose the instances: ``n_scanned``,
        ``scan_accuracy`` (the share classified correctly) and ``source``.
    screen : list of dict or None
        The per-factor screen of the instances (:func:`factor_screen`), each
        row with ``left_out`` (a foreign factor of the default space, fixed
        at its identity in :attr:`generator`).
    """

    generator: Any
    instances: np.ndarray
    sources: list[str] | None = None
    scan: dict[str, Any] | None = None
    screen: list[dict[str, Any]] | None = None

    @property
    def left_out(self) -> dict[str, float]:
        """The factors left out of the examination (``{name: the value it is fixed at}``, companions included)."""
        from fitaudit.data.transforms import COMPANIONS, identity_value

        names = [row["factor"] for row in self.screen or [] if row["left_out"]]
        return {n: identity_value(n) for name in names for n in (name, *COMPANIONS.get(name, ()))}

    def check_space(self, result: Any) -> dict[str, Any] | None:
        """The space check of an examination of this scenario's instances (None without a scan or reference queries).

        The instances were chosen among the images the model classifies
        correctly untouched; their accuracy under random factors is that of
        the examination's uniform random reference queries (the same number
        the examination's verdict compares its worst case with).
        """
        ref = result.reference_queries
        if self.scan is None or not ref or not len(ref.get("label", [])):
            return None
        n = len(result.instances)
        check = space_check(np.ones(n, dtype=bool), np.asarray(ref["predicted"]) == np.asarray(ref["label"]),
                            reference=f"the {n} examined images of {self.scan['source']} (chosen among the "
                                      f"{self.scan['scan_accuracy']:.0%} of {self.scan['n_scanned']:,} scanned "
                                      "images it classifies correctly untouched)")
        if self.screen is not None:
            check = with_screen(check, self.screen)
        return {**with_factor_drops(check, result), "n_scanned": self.scan["n_scanned"],
                "scan_accuracy": self.scan["scan_accuracy"]}


def with_screen(check: dict[str, Any], screen: list[dict[str, Any]]) -> dict[str, Any]:
    """``check`` decided by the per-factor screen: ``factors_alone`` (its rows), ``factor_threshold``
    (:data:`FOREIGN_FACTOR_DROP`) and ``foreign`` (:func:`is_foreign`)."""
    out = {**check, "factors_alone": [dict(row) for row in screen], "factor_threshold": FOREIGN_FACTOR_DROP}
    return {**out, "foreign": is_foreign(out)}


def is_foreign(check: Mapping[str, Any]) -> bool:
    """Whether a space check calls the space foreign (module docstring).

    With a per-factor screen (``factors_alone``): an examined factor (not
    left out) alone, far from its default, drops the accuracy by more than
    :data:`FOREIGN_FACTOR_DROP`; without one: all the factors at once drop
    it by more than the check's ``threshold``.
    """
    rows = check.get("factors_alone")
    if rows is None:
        return bool(check["drop"] > check["threshold"])
    return any(not row["left_out"] and row["drop"] > FOREIGN_FACTOR_DROP for row in rows)


def factor_screen(classifier: Any, generator: Any, instances: np.ndarray, *, draws: int = SCREEN_DRAWS,
                  random_state: Any = 0) -> list[dict[str, Any]]:
    """The instances' accuracy under each factor alone, against their accuracy untouched.

    Parameters
    ----------
    classifier : Classifier
    generator : ImageTransformGenerator
    instances : array of int
        Generator indices.
    draws : int
        Values of a factor per instance: one uniform draw in each of
        ``draws`` equal slices of its range (stratified, so a binary factor
        such as ``flip`` is set in half the draws of every instance); its
        companions (:data:`fitaudit.data.transforms.COMPANIONS`, the
        occluding square's centre) are drawn uniformly with it; every other
        factor stays at its default.

    Returns
    -------
    list of dict
        One per factor with a range (companions excepted), in the space's
        order: ``factor``, ``low``, ``high``, ``default``, ``unit``, ``n``
        (queries), ``images`` (instances), ``clean_accuracy`` (the
        instances at the space's defaults), ``accuracy`` (under the factor
        alone), ``split`` (:func:`factor_split`), ``n_far`` and
        ``far_accuracy`` (the draws farther than ``split`` from the
        default), ``drop`` (clean - far) and ``left_out`` (False;
        :func:`image_scenario` sets it).
    """
    from fitaudit.data.transforms import COMPANIONS

    draws = check_int(draws, "draws", minimum=1)
    rng = check_random_state(random_state)
    space = generator.factor_space
    idx = np.asarray(instances, dtype=np.int64)
    base = np.asarray(space.defaults, dtype=np.float64)
    labels = np.asarray(generator.labels)[idx]
    clean = float(np.mean(_predict(classifier, [generator.generate(idx, np.tile(base, (len(idx), 1)))]) == labels))
    companions = {c for names in COMPANIONS.values() for c in names}
    rows = []
    for c, factor in enumerate(space.factors):
        if factor.high <= factor.low or factor.name in companions:
            continue
        many = np.repeat(idx, draws)
        values = np.tile(base, (len(many), 1))
        slices = np.tile(np.arange(draws), len(idx))
        values[:, c] = factor.low + (factor.high - factor.low) * (slices + rng.random(len(many))) / draws
        for name in COMPANIONS.get(factor.name, ()):
            k = space.names.index(name)
            values[:, k] = rng.uniform(space[name].low, space[name].high, len(many))
        right = _predict(classifier, (generator.generate(many[s:s + 1024], values[s:s + 1024])
                                      for s in range(0, len(many), 1024))) == np.repeat(labels, draws)
        described = {"low": factor.low, "high": factor.high, "default": factor.default, "periodic": factor.periodic}
        split = factor_split(described)
        far = factor_distance(values[:, c], described) > split
        far_accuracy = float(right[far].mean()) if far.any() else float(right.mean())
        rows.append({"factor": factor.name, "low": float(factor.low), "high": float(factor.high),
                     "default": float(factor.default), "unit": factor.unit, "n": int(len(many)), "images": int(len(idx)),
                     "clean_accuracy": clean, "accuracy": float(right.mean()), "split": split, "n_far": int(far.sum()),
                     "far_accuracy": far_accuracy, "drop": clean - far_accuracy, "left_out": False})
    return rows


def space_check(clean_correct: Any, random_correct: Any, *, reference: str) -> dict[str, Any]:
    """Accuracy on untouched inputs vs under random factors, and whether the space is foreign.

    Parameters
    ----------
    clean_correct : array of bool
        Per untouched input: classified correctly.
    random_correct : array of bool
        Per query with uniformly random factors: classified correctly.
    reference : str
        What the clean accuracy was measured on (for people).

    Returns
    -------
    dict
        ``clean_accuracy``, ``random_accuracy``, ``n_clean``, ``n_random``,
        ``drop`` (clean - random), ``threshold`` (:data:`FOREIGN_DROP`),
        ``foreign`` (drop > threshold) and ``reference``.
    """
    clean = np.asarray(clean_correct, dtype=bool)
    noisy = np.asarray(random_correct, dtype=bool)
    if not len(clean) or not len(noisy):
        raise InputError("`space_check` needs at least one untouched input and one random query.")
    clean_accuracy, random_accuracy = float(clean.mean()), float(noisy.mean())
    drop = clean_accuracy - random_accuracy
    return {
        "clean_accuracy": clean_accuracy, "random_accuracy": random_accuracy,
        "n_clean": int(len(clean)), "n_random": int(len(noisy)), "drop": drop,
        "threshold": FOREIGN_DROP, "foreign": bool(drop > FOREIGN_DROP), "reference": reference,
    }  # a per-factor screen (:func:`with_screen`) decides ``foreign`` instead


def factor_distance(values: Any, factor: Mapping[str, Any]) -> np.ndarray:
    """Distance of ``values`` from the factor's default (around the circle for a periodic factor)."""
    d = np.abs(np.asarray(values, dtype=float) - float(factor["default"]))
    if factor.get("periodic"):
        period = float(factor["high"]) - float(factor["low"])
        d = np.minimum(d, period - d)
    return d


def factor_split(factor: Mapping[str, Any]) -> float:
    """Half the largest distance from the default a value of the factor can have (the near/far boundary)."""
    low, high, default = float(factor["low"]), float(factor["high"]), float(factor["default"])
    reach = max(high - default, default - low)
    if factor.get("periodic"):
        reach = min(reach, (high - low) / 2)
    return reach / 2


def factor_drops(reference: Mapping[str, Any], factor_space: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per factor, the accuracy of the random queries that drew it near its default against those that drew it far.

    Parameters
    ----------
    reference : mapping of arrays
        The examination's uniform random reference queries: ``label``,
        ``predicted`` and one column per factor.
    factor_space : mapping
        The examined factors (:meth:`fitaudit.data.factors.FactorSpace.to_dict`).

    Returns
    -------
    list of dict
        One per factor that has a range and both near and far queries,
        largest drop first: ``factor``, ``default``, ``split`` (far means a
        distance from the default above it, :func:`factor_split`),
        ``unit``, ``near_accuracy``, ``far_accuracy``, ``n_near``, ``n_far``
        and ``drop`` (near - far).
    """
    correct = np.asarray(reference["predicted"]) == np.asarray(reference["label"])
    rows = []
    for name, factor in factor_space.items():
        if float(factor["high"]) <= float(factor["low"]) or name not in reference:
            continue
        split = factor_split(factor)
        far = factor_distance(reference[name], factor) > split
        if far.all() or not far.any():
            continue
        near_accuracy, far_accuracy = float(correct[~far].mean()), float(correct[far].mean())
        rows.append({"factor": name, "default": float(factor["default"]), "split": split,
                     "unit": str(factor.get("unit", "")), "near_accuracy": near_accuracy, "far_accuracy": far_accuracy,
                     "n_near": int((~far).sum()), "n_far": int(far.sum()), "drop": near_accuracy - far_accuracy})
    return sorted(rows, key=lambda row: -row["drop"])


def with_factor_drops(check: dict[str, Any], result: Any) -> dict[str, Any]:
    """``check`` with the per-factor drops of ``result``'s random queries (:func:`factor_drops`)."""
    return {**check, "factor_drops": factor_drops(result.reference_queries, result.factor_space)}


def shapes_space_check(model: Any, result: Any, *, class_names: Sequence[str], image_size: int = 32,
                       train_ranges: Mapping[str, Any] | None = None, n_objects: int = 4, renders: int = 4,
                       random_state: Any = 0) -> dict[str, Any] | None:
    """The space check of a Shapes examination: the model's own test renders vs the examined space.

    The clean accuracy is measured on ``n_objects`` held-out (test split)
    objects per class, ``renders`` views each, drawn from the factor ranges
    the model was trained on (``train_ranges``; default the whole world);
    the accuracy under random factors is that of the examination's uniform
    random reference queries. None without reference queries.
    """
    from fitaudit.data.shapes import make_dataset, shapes_factor_space
    from fitaudit.models import as_classifier

    ref = result.reference_queries
    if not ref or not len(ref.get("label", [])):
        return None
    space = shapes_factor_space()
    if train_ranges:
        space = space.restrict(**{k: tuple(v) for k, v in train_ranges.items() if k in space.names})
    test = make_dataset(n_objects, renders, split="test", classes=list(class_names), factor_space=space,
                        image_size=image_size, random_state=random_state)
    predicted = np.argmax(as_classifier(model).logits(test.images), axis=1)
    check = space_check(predicted == test.labels, np.asarray(ref["predicted"]) == np.asarray(ref["label"]),
                        reference=f"{len(test.labels)} test renders of its training distribution")
    return with_factor_drops(check, result)


def balanced_sample(labels: np.ndarray, eligible: np.ndarray, n: int, *, random_state: Any = 0) -> np.ndarray:
    """``n`` eligible rows taken class by class in turn (random within a class), sorted.

    Every class with eligible rows gets ``n // k`` or one more (k classes),
    fewer when it has fewer; the rest goes to the classes that have more.
    """
    rng = check_random_state(random_state)
    pools = {int(c): list(rng.permutation(np.flatnonzero(eligible & (labels == c)))) for c in np.unique(labels)}
    pools = {c: p for c, p in pools.items() if p}
    picked: list[int] = []
    while len(picked) < n and pools:
        for c in sorted(pools):
            if len(picked) == n:
                break
            picked.append(int(pools[c].pop(0)))
            if not pools[c]:
                del pools[c]
    return np.sort(np.asarray(picked, dtype=np.int64))


def _predict(classifier: Any, batches: Any) -> np.ndarray:
    return np.concatenate([np.argmax(np.asarray(classifier.logits(x)), axis=1) for x in batches])


def image_scenario(
    model: Any,
    images: Any,
    labels: Sequence[int] | np.ndarray | None = None,
    *,
    pipeline: Any = None,
    padding: int = 0,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    factors: Mapping[str, Any] | None = None,
    instances: int = 12,
    max_scan: int = 2048,
    class_names: Sequence[str] | None = None,
    random_state: Any = 0,
    batch_size: int = 256,
    device: str = "cpu",
    progress: bool = False,
    option: str = "images",
    factor_option: str = "factors",
    screen: bool = True,
) -> Scenario:
    """A sample of correctly classified images under the image-transform generator.

    Parameters
    ----------
    model : classifier
        Anything :func:`fitaudit.models.as_classifier` accepts.
    images : array (N, C, H, W) or ImageDataset
        Images (or canvases, with ``padding``) in [0, 1]; or a dataset of
        image files, decoded through ``pipeline`` (its canvases: padding
        P = floor((R - C) / 2), its mean and std).
    labels : sequence of int
        With an array of images.
    pipeline : EvalPipeline
        With a dataset.
    padding, mean, std
        With an array: the canvas border and the model's normalisation.
    factors : mapping, optional
        Factor ranges (:func:`fitaudit.data.transforms.image_factor_space`).
        Narrow the factors here rather than through ``examine``'s
        ``ranges``: the space check draws from the generator's space.
    instances : int
        How many correctly classified images to examine.
    max_scan : int
        At most this many images (a random sample of them) are classified
        untouched to find correct ones and measure the clean accuracy.
    random_state : int
        Seeds the samples and the generator's noise.
    screen : bool
        Screen the factors one by one on up to :data:`SCREEN_IMAGES`
        correctly classified scanned images (:func:`factor_screen`) and leave out the foreign ones that
        ``factors`` does not set (module docstring).

    Returns
    -------
    Scenario
        Its generator holds the examined images (instances ``0..n-1``);
        :meth:`Scenario.check_space` gives the space check of their examination.
    """
    from fitaudit.data.images import ImageDataset
    from fitaudit.data.transforms import ImageTransformGenerator
    from fitaudit.models import as_classifier

    n = check_int(instances, "instances", minimum=1)
    max_scan = check_int(max_scan, "max_scan", minimum=1)
    seed = int(check_random_state(random_state).integers(2**31))
    rng = np.random.default_rng(seed)
    classifier = as_classifier(model, batch_size=batch_size, device=device)
    if isinstance(images, ImageDataset):
        if pipeline is None:
            raise InputError(f"`pipeline` is needed to decode the images of `{option}`.")
        all_labels, total, sources = images.labels, len(images), list(images.paths)
        class_names = class_names if class_names is not None else images.classes
        settings: dict[str, Any] = {"padding": pipeline.margin, "mean": pipeline.mean, "std": pipeline.std}
    else:
        if labels is None:
            raise InputError(f"`labels` must be given with an array of `{option}`.")
        array = np.asarray(images)
        all_labels, total, sources = np.asarray(labels), len(array), None
        settings = {"padding": padding, "mean": mean, "std": std}
    scan = np.sort(rng.choice(total, size=min(max_scan, total), replace=False))

    def build(rows: np.ndarray, factors: Mapping[str, Any] | None = factors) -> Any:
        if isinstance(images, ImageDataset):
            subset = images.subset(rows)
            canvases = np.concatenate([b.images for b in subset.batches(pipeline, kind="canvas", batch_size=batch_size,
                                                                          name=option, skip_option=None)])
        else:
            canvases = array[rows]
        return ImageTransformGenerator(canvases, all_labels[rows], factors=factors, class_names=class_names,
                                       name=str(getattr(images, "source", "images")), random_state=seed,
                                       batch_size=batch_size, device=device, option=factor_option, **settings)

    probe = build(scan[:1])
    probe.check_model(classifier, labels=all_labels, option=option)
    scanned = build(scan) if not isinstance(images, ImageDataset) else None
    if scanned is not None:
        inputs = (scanned.model_input(np.arange(s, min(s + batch_size, len(scan)))) for s in range(0, len(scan), batch_size))
    else:
        inputs = (b.images for b in images.subset(scan).batches(pipeline, kind="input", batch_size=batch_size, name=option,
                                                                skip_option=None))
    clean = _predict(classifier, tqdm(inputs, total=math.ceil(len(scan) / batch_size), desc="untouched images",
                                      disable=not progress, unit="batch")) == all_labels[scan]
    if not clean.any():
        raise InputError(f"`{option}`: the model classifies none of the {len(scan)} images scanned correctly; "
                         "nothing to examine (are the labels in the model's class order?).")
    chosen = scan[balanced_sample(all_labels[scan], clean, n, random_state=rng)]
    scenario = Scenario(build(chosen), np.arange(len(chosen)),
                        [sources[i] for i in chosen] if sources is not None else None,
                        {"n_scanned": int(len(scan)), "scan_accuracy": float(clean.mean()),
                         "source": str(getattr(images, "source", option))})
    if screen:
        screened = scan[balanced_sample(all_labels[scan], clean, SCREEN_IMAGES, random_state=rng)]
        scenario.screen = factor_screen(classifier, build(screened), np.arange(len(screened)), random_state=rng)
        foreign = [row for row in scenario.screen
                   if row["drop"] > FOREIGN_FACTOR_DROP and row["factor"] not in (factors or {})]
        if foreign and len(foreign) < len(scenario.screen):  # something is left to examine
            for row in foreign:
                row["left_out"] = True
            scenario.generator = build(chosen, {**(factors or {}), **scenario.left_out})
    return scenario


def shapes_scenario(class_names: Sequence[str], instances: int, *, image_size: int = 32) -> Scenario:
    """Held-out Shapes objects of ``class_names``, ``instances`` of them taken class by class in turn.

    The first object of every class, then the second, ... (validation split).
    """
    from fitaudit.data.shapes import ShapesGenerator

    n = check_int(instances, "instances", minimum=1)
    per_class = math.ceil(n / len(class_names))
    generator = ShapesGenerator(per_class, classes=list(class_names), image_size=image_size)
    rank = np.zeros(len(generator.labels), dtype=np.int64)
    for c in np.unique(generator.labels):
        rows = np.flatnonzero(generator.labels == c)
        rank[rows] = np.arange(len(rows))
    order = np.lexsort((generator.labels, rank))
    return Scenario(generator, np.sort(order[:n]))
