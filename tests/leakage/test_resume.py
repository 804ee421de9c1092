"""The leakage search resumes from its checkpoints: same answer, what was reused, changed inputs recomputed."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit.leakage import image_leakage, image_search, image_space
from fitaudit.leakage.resume import Checkpoints


def smooth_images(n: int, seed: int, size: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.random((n, 3, 4, 4))
    return np.clip(coarse.repeat(size // 4, axis=2).repeat(size // 4, axis=3), 0, 1).astype(np.float32)


@pytest.fixture()
def small_blocks(monkeypatch):
    """Blocks of 10 images and 16 queries, so a few dozen images make several resumable units."""
    monkeypatch.setattr(image_space, "FEATURE_BLOCK", 10)
    monkeypatch.setattr(image_search, "SEARCH_BLOCK", 16)


@pytest.fixture()
def sets():
    train = smooth_images(40, 1)
    scored = smooth_images(35, 2)
    scored[:6] = np.clip(train[[1, 5, 9, 20, 30, 39]] * 1.1, 0, 1)
    return scored, train


def same(a, b) -> bool:
    return a.to_dict() == b.to_dict()


@pytest.mark.slow
def test_rerun_reuses_every_block_and_gives_the_same_result(small_blocks, sets, tmp_path) -> None:
    scored, train = sets
    fresh = image_leakage(scored, train, augmented=False)
    first = Checkpoints(tmp_path)
    assert same(image_leakage(scored, train, checkpoint_dir=first, augmented=False), fresh)
    assert first.reused == 0
    again = Checkpoints(tmp_path)
    assert same(image_leakage(scored, train, checkpoint_dir=again, augmented=False), fresh)
    # features 4 + 4 blocks, calibration 3 blocks (40 training rows), search 3 blocks (35 scored rows)
    assert again.counts == {"features of scored_images": [4, 4], "features of train_images": [4, 4],
                            "calibration": [3, 3], "search": [3, 3]}
    assert again.summary() == (f"Reused 14 of 14 blocks from {tmp_path} (features of scored_images 4 of 4, "
                               "features of train_images 4 of 4, calibration 3 of 3, search 3 of 3).")
    augmented = image_leakage(scored, train, checkpoint_dir=tmp_path)  # every edit's blocks kept once
    rerun = Checkpoints(tmp_path)
    assert same(image_leakage(scored, train, checkpoint_dir=rerun), augmented)
    assert rerun.reused == sum(n for _, n in rerun.counts.values())
    assert rerun.counts["search under the edits"] == [33, 33]  # 3 blocks under each of 11 edits


@pytest.mark.slow
def test_interrupted_run_resumes_with_the_same_result(small_blocks, sets, tmp_path, monkeypatch) -> None:
    scored, train = sets
    fresh = image_leakage(scored, train, augmented=False)
    real = image_search._block_twins
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:  # the calibration's 3 blocks and the search's first are done
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(image_search, "_block_twins", interrupted)
    with pytest.raises(KeyboardInterrupt):
        image_leakage(scored, train, checkpoint_dir=tmp_path, augmented=False)
    monkeypatch.setattr(image_search, "_block_twins", real)
    resumed = Checkpoints(tmp_path)
    assert same(image_leakage(scored, train, checkpoint_dir=resumed, augmented=False), fresh)
    assert resumed.counts["calibration"] == [3, 3] and resumed.counts["search"] == [1, 3]


@pytest.mark.slow
def test_changed_input_or_setting_is_not_reused(small_blocks, sets, tmp_path) -> None:
    scored, train = sets
    image_leakage(scored, train, checkpoint_dir=tmp_path)
    changed = train.copy()
    changed[25] = smooth_images(1, 9)[0]  # one training image of the third feature block
    after = Checkpoints(tmp_path)
    result = image_leakage(scored, changed, checkpoint_dir=after)
    assert same(result, image_leakage(scored, changed))
    assert after.counts["features of train_images"] == [3, 4]
    assert after.counts["search"] == [0, 3]  # the reference set changed
    assert after.counts["calibration"] == [0, 3]  # training against training: changed too
    unchanged = Checkpoints(tmp_path)
    image_leakage(smooth_images(35, 3), train, checkpoint_dir=unchanged)
    assert unchanged.counts["calibration"] == [3, 3]  # other scored images: the same training null
    subset = Checkpoints(tmp_path)
    image_leakage(scored, train, checkpoint_dir=subset, n_calibration=20)
    assert subset.counts["calibration"] == [0, 2]  # another calibration subset: other queries
    assert subset.counts["search"] == [3, 3]


@pytest.mark.slow
def test_without_a_folder_nothing_is_kept(sets) -> None:
    scored, train = sets
    checkpoints = Checkpoints()
    image_leakage(scored, train, checkpoint_dir=checkpoints)
    assert checkpoints.summary() is None and checkpoints.reused == 0
    assert checkpoints.counts["search"] == [0, 1]


def test_changed_code_is_not_reused(sets, tmp_path, monkeypatch) -> None:
    from fitaudit.leakage import resume

    scored, train = sets
    image_leakage(scored, train, checkpoint_dir=tmp_path, augmented=False)
    monkeypatch.setattr(resume, "_code_key", lambda: "another version of the code")
    after = Checkpoints(tmp_path)
    image_leakage(scored, train, checkpoint_dir=after, augmented=False)
    assert after.reused == 0 and sum(n for _, n in after.counts.values()) == 4



def test_folder_blocks_are_keyed_by_the_model_and_the_pipeline(tmp_path) -> None:
    """Stored predictions are not reused for another model, nor features for another pipeline."""
    pil = pytest.importorskip("PIL.Image")
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.leakage.folders import folder_features

    rng = np.random.default_rng(8)
    (tmp_path / "imgs" / "a").mkdir(parents=True)
    for i in range(5):
        pixels = (rng.random((4, 4, 3)).repeat(4, 0).repeat(4, 1) * 255).astype(np.uint8)
        pil.fromarray(pixels).save(tmp_path / "imgs" / "a" / f"{i}.png")
    dataset = open_images(tmp_path / "imgs")

    class Constant:
        n_classes = 3

        def __init__(self, label: int) -> None:
            self.label = label

        def predict(self, x):
            return np.full(len(x), self.label)

    def run(label: int, key: str, crop: int = 16):
        checkpoints = Checkpoints(tmp_path / "ck")
        pipeline = EvalPipeline(resize=16, crop=crop, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
        _, _, predictions = folder_features(dataset, pipeline, model=Constant(label), model_key=key,
                                            checkpoint_dir=checkpoints)
        return predictions.tolist(), checkpoints.counts["features of --images"]

    assert run(1, "one") == ([1] * 5, [0, 1])
    assert run(1, "one") == ([1] * 5, [1, 1])
    assert run(2, "two") == ([2] * 5, [0, 1])  # another model: predicted afresh
    assert run(2, "two", crop=12) == ([2] * 5, [0, 1])  # another pipeline
