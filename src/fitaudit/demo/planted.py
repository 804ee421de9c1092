"""The demo's leakage part: a Shapes test folder with planted twins of training images, and its known answer.

Shapes renders of training and held-out objects are written as PNG
folders, with twins of training images planted among the test files (file
copies, JPEG re-encodings, 1-2 px shifts, brightness changes:
:mod:`fitaudit.leakage.planted`); the leakage search reads both folders
through the evaluation pipeline, as ``fitaudit audit --images`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.auditing.first import INSTRUMENT
from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart

#: classes of the planted-twin folders
PLANTED_CLASSES = ("sphere", "cube", "torus", "star")

#: the largest share of clean test images the search may flag (or the training images' own share, if larger)
FLAGGED_CLEAN = 0.02


def planted_folders_part(folder: Any, random_state: int, *, n_objects: int = 20, renders: int = 4, n_per_kind: int = 10,
                         progress: bool = False) -> AuditPart:
    """The leakage search on a Shapes test folder with planted twins of training images.

    Shapes renders (32 x 32) of ``n_objects`` training and as many held-out
    objects per class are written as PNG folders, ``n_per_kind`` twins of
    each kind of :data:`fitaudit.leakage.planted.TWIN_KINDS` among the test
    files (JPEG twins as .jpg files); the folders are read through the
    evaluation pipeline (:mod:`fitaudit.data.images`). Its known answer:
    :func:`planted_known_answer`.
    """
    from fitaudit.data.images import check_images, open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.data.shapes import make_splits
    from fitaudit.leakage import image_leakage
    from fitaudit.leakage.folders import folder_features
    from fitaudit.leakage.planted import write_planted_folders

    splits = make_splits({"train": n_objects, "test": n_objects}, renders, classes=list(PLANTED_CLASSES),
                         random_state=random_state)
    written = write_planted_folders(folder, splits["train"].images, splits["train"].labels, splits["test"].images,
                                    splits["test"].labels, list(PLANTED_CLASSES), n_per_kind=n_per_kind,
                                    random_state=random_state + 1)
    pipeline = EvalPipeline(resize=32, crop=32)
    test, _ = check_images(open_images(written.test, name="images"), name="images")
    train, _ = check_images(open_images(written.train, name="train_images"), name="train_images")
    scored, _, _ = folder_features(test, pipeline, progress=progress, name="images")
    reference, _, _ = folder_features(train, pipeline, progress=progress, name="train_images")
    result = image_leakage(scored, reference, scored_name="images", train_name="train_images", random_state=random_state)
    relative = [str(Path(p).relative_to(written.test)) for p in test.paths]
    train_names = [str(Path(p).relative_to(written.train)) for p in train.paths]
    matched = {relative[i]: train_names[j] for i, j in zip(result.near_scored.tolist(), result.near_train.tolist())}
    recall = {}
    for kind in dict.fromkeys(kind for _, kind in written.twins.values()):
        planted = [name for name, (_, k) in written.twins.items() if k == kind]
        recall[kind] = float(np.mean([matched.get(name) == written.twins[name][0] for name in planted]))
    clean = [name for name in relative if name not in written.twins]
    numbers: dict[str, Any] = {f"recall, {kind}": value for kind, value in recall.items()}
    numbers["clean test images flagged"] = sum(name in matched for name in clean) / len(clean)
    numbers["training images' own share within the threshold"] = result.null_near / result.n_calibration
    return part_from_result("leakage-planted", INSTRUMENT, "Leakage: a Shapes test folder with planted twins",
                            result, numbers=numbers,
                            settings={"n_objects": n_objects, "renders": renders, "n_per_kind": n_per_kind,
                                      "random_state": random_state, "group": "planted"})


def planted_known_answer(part: AuditPart) -> dict[str, Any]:
    """Every twin found and matched to its source; at most :data:`FLAGGED_CLEAN` of the clean test images flagged.

    On folders so small that one image is more than 2%, the bound is the
    training images' own share within the threshold (the null's rate).
    Computed from the part's numbers (again whenever a report is rebuilt).
    """
    recall = [value for name, value in part.numbers.items() if name.startswith("recall, ")]
    flagged = part.numbers["clean test images flagged"]
    allowed = max(FLAGGED_CLEAN, part.numbers.get("training images' own share within the threshold", 0.0))
    return {"text": f"all {part.settings['n_per_kind']} planted twins of each kind found and matched to their "
                    f"source; at most {allowed:.1%} of the clean test images flagged (2%, or the training "
                    "images' own share within the threshold if larger)",
            "met": bool(recall and min(recall) == 1.0 and flagged <= allowed)}
