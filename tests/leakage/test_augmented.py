"""Augmented copies (issue 49): flips, rescales and rotations undone before the comparison (fitaudit.leakage.edits)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage
from scipy.optimize import minimize_scalar

from fitaudit.leakage import edited_views, edits, image_leakage, image_search, image_space


def smooth_field(n: int, seed: int, side: int = 48) -> np.ndarray:
    """Random smooth grey scenes (n, side, side) in [0, 1]: Gaussian-filtered noise, no symmetry."""
    rng = np.random.default_rng(seed)
    fields = ndimage.gaussian_filter(rng.standard_normal((n, side, side)), sigma=(0, 2.5, 2.5))
    fields -= fields.min(axis=(1, 2), keepdims=True)
    return (fields / fields.max(axis=(1, 2), keepdims=True)).astype(np.float32)


def centre(scenes: np.ndarray, size: int = 32) -> np.ndarray:
    """The centre size x size crop of every scene, as (n, 1, size, size)."""
    top = (scenes.shape[-1] - size) // 2
    return np.ascontiguousarray(scenes[:, None, top : top + size, top : top + size])


def inverse_by_scipy(image: np.ndarray, edit: edits.Edit) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of ``edit`` on a (H, W) image by scipy's map_coordinates (bilinear, edge repeated), and the
    mask of output pixels that sampled inside: the formula of :func:`edits.warp_matrix`, written independently."""
    height, width = image.shape
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    cy, cx = (height - 1) / 2, (width - 1) / 2
    u = (cx - xs) if edit.flip else (xs - cx)
    v = ys - cy
    a = math.radians(-edit.angle)
    x = cx + (math.cos(a) * u - math.sin(a) * v) / edit.scale
    y = cy + (math.sin(a) * u + math.cos(a) * v) / edit.scale
    inside = (x > -1e-9) & (x < width - 1 + 1e-9) & (y > -1e-9) & (y < height - 1 + 1e-9)
    return ndimage.map_coordinates(image.astype(np.float64), [y, x], order=1, mode="nearest"), inside


def slow_distance(wx: np.ndarray, valid: np.ndarray, wy: np.ndarray, floor: float) -> float:
    """d of image_space's docstring for one pair, the query's working image ``wx`` already edited: every shift by
    scipy, each cell weighted by the share of its pixels the shift kept times the share the edit kept valid, the
    gain found numerically."""
    target = image_space.raw_view(wy[None].astype(np.float32))[0].astype(np.float64)
    edit_share = np.concatenate([valid.reshape(8, 4, 8, 4).mean(axis=(1, 3)).ravel(),
                                 *[valid.reshape(4, 8, 4, 8).mean(axis=(1, 3)).ravel()] * 2])
    best = np.inf
    m, top = image_space.MAX_SHIFT, image_space.MAX_GAIN
    for dy in range(-m, m + 1):
        for dx in range(-m, m + 1):
            moved = ndimage.shift(wx, (0, dy, dx), order=1, mode="nearest")
            view = image_space.raw_view(moved[None].astype(np.float32))[0].astype(np.float64)
            kept = np.zeros((32, 32))
            rows, cols = np.arange(32) - dy, np.arange(32) - dx
            kept[np.ix_((rows >= 0) & (rows <= 31), (cols >= 0) & (cols <= 31))] = 1.0
            weight = np.concatenate([kept.reshape(8, 4, 8, 4).mean(axis=(1, 3)).ravel(),
                                     *[kept.reshape(4, 8, 4, 8).mean(axis=(1, 3)).ravel()] * 2]) * edit_share
            a, b = view.copy(), target.copy()
            for vec in (a, b):
                vec[:64] -= np.sum(weight[:64] * vec[:64]) / weight[:64].sum()
            fit = minimize_scalar(lambda g, a=a, b=b, w=weight: float(np.sqrt(np.sum(w * (a - g * b) ** 2))),
                                  bounds=(1 / top, top), method="bounded", options={"xatol": 1e-10})
            scale = max(np.sqrt(np.sqrt(np.sum(weight * a**2) * np.sum(weight * b**2))), floor)
            best = min(best, float(fit.fun) / scale)
    return best


@pytest.mark.parametrize("edit", [edits.FLIP, edits.Edit(scale=0.8), edits.Edit(scale=1.25), edits.Edit(angle=8.0),
                                  edits.Edit(flip=True, angle=-4.0)])
def test_inverse_edit_equals_scipys_interpolation(edit: edits.Edit) -> None:
    image = smooth_field(1, 3, 32)[0]
    expected, inside = inverse_by_scipy(image, edit)
    assert edits.apply(image[None], edit)[0] == pytest.approx(expected, abs=1e-5)
    assert np.array_equal(edits.valid_share(32, 32, edit) > 0, inside)


@pytest.mark.parametrize("edit", [edits.Edit(scale=1.25), edits.Edit(angle=-4.0), edits.FLIP])
def test_edited_views_equal_the_views_of_the_warped_images(edit: edits.Edit) -> None:
    """The first pass's views under an edit and a shift (one product per shift, edited_views) equal the views of
    the warped working images moved by that shift (image_space._views)."""
    work = np.repeat(smooth_field(3, 10, 32)[:, None], 3, axis=1)
    work[:, 1:] *= 0.3
    moves = image_space.shifts((66, 66), image_search.SEARCH_STEPS)
    expected = image_space._views(edits.apply(work, edit), moves)
    assert edited_views.edited_views(work, edit, moves) == pytest.approx(expected, abs=1e-5)


def test_flip_is_the_mirror_image_and_a_quarter_turn_is_rot90() -> None:
    image = smooth_field(2, 4, 32)
    assert np.array_equal(edits.apply(image, edits.FLIP), image[..., ::-1])
    turned = edits.apply(image, edits.Edit(angle=90.0))
    assert turned == pytest.approx(np.rot90(image, k=1, axes=(1, 2)), abs=1e-5) or \
        turned == pytest.approx(np.rot90(image, k=-1, axes=(1, 2)), abs=1e-5)
    assert edits.Edit(flip=True, scale=0.9).name == "horizontal flip, rescaled 0.9x"
    assert edits.IDENTITY.name == "none"


@pytest.mark.slow
def test_edited_search_equals_a_slow_search_over_every_training_image_and_edit(monkeypatch) -> None:
    """Every training image is a candidate (CANDIDATES = the set): the search's relative distance under each edit,
    the smallest kept, equals the ratio test computed from d to every training image under every edit by
    :func:`slow_distance` (d only: the sets have no fine images or DCT blocks)."""
    scenes = smooth_field(40, 5)
    train_images, scored_images = centre(scenes[:30]), centre(scenes[30:])
    scored_images[:3] = train_images[[4, 11, 20], ..., ::-1]  # three mirror images
    monkeypatch.setattr(image_search, "CANDIDATES", len(train_images))
    train = image_space.ImageFeatures(image_space.content_hashes(train_images),
                                      image_space.working_images(train_images), train_images.shape[1:])
    scored = image_space.ImageFeatures(image_space.content_hashes(scored_images),
                                       image_space.working_images(scored_images), scored_images.shape[1:])
    floor = image_space.contrast_floor(train.raw_views)
    searched = (edits.IDENTITY, edits.FLIP, edits.Edit(scale=0.9), edits.Edit(angle=-4.0))
    ratios, indices, which = image_search.nearest_edited_twins(scored, train, floor=floor, searched=searched)
    slow_ratio = np.full((len(searched), len(scored)), np.inf)
    slow_index = np.zeros((len(searched), len(scored)), dtype=np.int64)
    for k, edit in enumerate(searched):
        targets = train.work
        if edits.on_reference(edit):  # a zoom-in: the training images zoomed as the copy was, the query whole
            targets = np.stack([[inverse_by_scipy(channel, edits.forward(edit))[0] for channel in work]
                                for work in train.work])
        for i in range(len(scored)):
            channels = [inverse_by_scipy(channel, edits.IDENTITY if edits.on_reference(edit) else edit)
                        for channel in scored.work[i]]
            wx, valid = np.stack([c[0] for c in channels]), channels[0][1].astype(np.float64)
            d = np.array([slow_distance(wx, valid, wy, floor) for wy in targets])
            order = np.argsort(d)
            slow_ratio[k, i], slow_index[k, i] = d[order[0]] / d[order[2]], order[0]  # runner-up skipped
            slow_ratio[k, i] /= valid.mean()  # the share of the image the inverse kept
    best = slow_ratio.argmin(axis=0)
    columns = np.arange(len(scored))
    assert ratios == pytest.approx(slow_ratio[best, columns], rel=1e-3, abs=1e-6)
    assert indices.tolist() == slow_index[best, columns].tolist()
    assert which[:3].tolist() == [1, 1, 1] and indices[:3].tolist() == [4, 11, 20]
    flagged = ratios <= image_search.RELATIVE_THRESHOLD
    assert np.flatnonzero(flagged).tolist() == np.flatnonzero(slow_ratio.min(axis=0) <= 0.4).tolist() == [0, 1, 2]


@pytest.mark.slow
def test_planted_augmented_twins_are_found_and_name_their_edit() -> None:
    """Mirror images, a 0.9x and a 1.2x re-crop resized back, and a 6-degree rotation of training scenes,
    planted among clean unseen scenes: each found, paired with its source and its edit named; without the
    augmented search the flips are not found."""
    scenes = smooth_field(260, 6, side=64)
    train_images, clean = centre(scenes[:200]), centre(scenes[200:])
    twins, sources, kinds = [], [], []
    for s in (3, 17, 42, 99):
        twins.append(train_images[s, :, :, ::-1])
        sources.append(s)
        kinds.append("horizontal flip")
    for s, scale in ((5, 0.9), (60, 1.2), (120, 0.9), (150, 1.2)):
        side = int(round(32 * scale))
        top = (64 - side) // 2
        region = scenes[s, top : top + side, top : top + side]
        twins.append(ndimage.zoom(region, 32 / side, order=1)[None, :32, :32])
        sources.append(s)
        kinds.append("rescaled")
    for s, angle in ((7, 6.0), (77, -6.0)):
        turned = ndimage.rotate(scenes[s], angle, reshape=False, order=1)
        twins.append(centre(turned[None])[0])
        sources.append(s)
        kinds.append("rotated")
    scored = np.concatenate([clean, np.stack(twins).astype(np.float32)])
    result = image_leakage(scored, train_images)
    assert result.mirror_share is not None and result.mirror_share < edits.MIRROR_SHARE
    assert "horizontal flip" in (result.searched_edits or [])
    pairs = {int(s): (int(t), e) for s, t, e in zip(result.near_scored, result.near_train, result.near_edit or [])}
    for k, (source, kind) in enumerate(zip(sources, kinds)):
        train_index, edit = pairs[len(clean) + k]
        assert train_index == source
        assert edit.startswith(kind)
    assert sum(i < len(clean) for i in pairs) <= 1
    before = image_leakage(scored, train_images, augmented=False)
    assert not set(range(len(clean), len(clean) + 4)) & set(before.near_scored.tolist())
    assert before.near_edit == ["none"] * before.n_near


def test_flips_are_not_searched_on_mirror_symmetric_images() -> None:
    """Scenes made mirror-symmetric (each the mean of itself and its mirror image): every image is a twin of its
    own mirror image, so a mirror image is no sign of a copy and flips are not searched."""
    scenes = centre(smooth_field(80, 7))
    symmetric = (scenes + scenes[..., ::-1]) / 2
    result = image_leakage(symmetric[60:], symmetric[:60])
    assert result.mirror_share is not None and result.mirror_share >= edits.MIRROR_SHARE
    assert "horizontal flip" not in (result.searched_edits or [])
    assert result.searched_edits is not None and result.searched_edits[0] == "none"


def _augmented_world() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """200 training scenes, 60 clean unseen ones, and 12 twins: mirror images, 0.85x re-crops (zoom-ins) and 1.2x
    zoom-outs resized back, 6-degree rotations; returns the training images, the scored ones and the sources."""
    scenes = smooth_field(260, 8, side=64)
    train_images, clean = centre(scenes[:200]), centre(scenes[200:])
    twins, sources = [], []
    for k, s in enumerate((3, 17, 42, 99, 5, 60, 120, 150, 7, 77, 130, 181)):
        if k < 3:
            twins.append(train_images[s, :, :, ::-1])
        elif k < 9:
            side = int(round(32 * (0.85 if k < 6 else 1.2)))
            top = (64 - side) // 2
            twins.append(ndimage.zoom(scenes[s, top : top + side, top : top + side], 32 / side, order=1)[None, :32, :32])
        else:
            twins.append(centre(ndimage.rotate(scenes[s], 6.0, reshape=False, order=1)[None])[0])
        sources.append(s)
    return train_images, np.concatenate([clean, np.stack(twins).astype(np.float32)]), np.array(sources)


@pytest.mark.slow
def test_the_first_pass_keeps_every_twin_the_full_search_flags() -> None:
    """The edits' first pass (image_search._first_pass: unshifted floored views in a few principal axes) sends on
    only queries whose estimate is near the threshold; the flagged set and the pairs equal those of the full
    search under every edit (threshold=None), every twin found and paired with its source, and the first pass
    does skip most clean queries."""
    train_images, scored_images, sources = _augmented_world()
    train, scored = image_space.image_features(train_images), image_space.image_features(scored_images)
    floor = image_space.contrast_floor(train.raw_views)
    searched = (edits.IDENTITY, edits.FLIP, *edits.RESAMPLED)
    limit = image_search.RELATIVE_THRESHOLD
    quick = image_search.nearest_edited_twins(scored, train, floor=floor, searched=searched, threshold=limit)
    full = image_search.nearest_edited_twins(scored, train, floor=floor, searched=searched)
    flagged = [np.flatnonzero(ratios <= limit) for ratios, _, _ in (quick, full)]
    assert flagged[0].tolist() == flagged[1].tolist()
    assert quick[1][flagged[0]].tolist() == full[1][flagged[1]].tolist()
    twins = np.arange(60, len(scored_images))
    assert set(twins.tolist()) <= set(flagged[0].tolist()) and quick[1][twins].tolist() == sources.tolist()
    reference = image_search._Reference(train, floor)
    clean = image_space.ImageFeatures(scored.hashes[:60], scored.work[:60], scored.shape)
    estimate, _ = image_search._first_pass(clean, reference, None, edits.Edit(angle=4.0))
    assert np.mean(estimate <= image_search.FIRST_PASS * limit) < 0.2


def test_a_zoom_in_is_compared_on_the_whole_image() -> None:
    """A zoom-in is applied to the training images (its inverse on the copy would sample outside it): the
    comparison keeps the whole image; a zoom-out's inverse stays inside; a rotation loses its corners."""
    assert edits.on_reference(edits.Edit(scale=0.8)) and not edits.on_reference(edits.Edit(scale=1.25))
    assert edits.forward(edits.Edit(scale=0.8)) == edits.Edit(scale=1.25)
    assert edits.kept_area(edits.Edit(scale=0.8), 32) == edits.kept_area(edits.Edit(scale=1.25), 32) == 1.0
    assert edits.valid_share(32, 32, edits.Edit(scale=0.8)).mean() < 0.7  # what the inverse would have kept
    assert 0.85 < edits.kept_area(edits.Edit(angle=8.0), 32) < 0.95


@pytest.mark.slow
def test_the_first_pass_keeps_zoom_outs_clipped_at_the_scenes_edge(monkeypatch) -> None:
    """A zoom-out (a re-crop larger than the side) that met the edge of its photo is shifted as well as rescaled.
    The first pass ranks such an edit's candidates at the nearest of the nine search shifts
    (image_search.FIRST_STEPS): every
    shifted 1.25x twin is flagged and paired with its source, as by a slow search over every training image
    (:func:`slow_distance`, every shift up to MAX_SHIFT); with the unshifted first pass two of them are lost."""
    scenes = smooth_field(60, 9, side=64)
    train_images, clean = centre(scenes[:40]), centre(scenes[40:])
    sources, moves = [3, 11, 25, 33], [(3, 0), (0, -3), (2, 2), (-3, 3)]
    twins = [ndimage.zoom(scenes[s, 12 + dy : 52 + dy, 12 + dx : 52 + dx], 32 / 40, order=1)[None, :32, :32]
             for s, (dy, dx) in zip(sources, moves)]
    scored_images = np.concatenate([clean, np.stack(twins).astype(np.float32)])
    train, scored = image_space.image_features(train_images), image_space.image_features(scored_images)
    floor = image_space.contrast_floor(train.raw_views)
    edit, limit = edits.Edit(scale=1.25), image_search.RELATIVE_THRESHOLD
    checked = [0, 5, 10, 15, 20, 21, 22, 23]  # four clean images and the four twins
    slow = []
    for i in checked:
        channels = [inverse_by_scipy(channel, edit) for channel in scored.work[i]]
        wx, valid = np.stack([c[0] for c in channels]), channels[0][1].astype(np.float64)
        d = np.array([slow_distance(wx, valid, wy, floor) for wy in train.work])
        order = np.argsort(d)
        slow.append((d[order[0]] / d[order[2]] / valid.mean(), order[0]))  # the runner-up skipped
    ratios, indices, _ = image_search.nearest_edited_twins(scored, train, floor=floor, searched=(edit,), threshold=limit)
    assert [i for i, (r, _) in zip(checked, slow) if r <= limit] == [20, 21, 22, 23]
    assert np.flatnonzero(ratios <= limit).tolist() == [20, 21, 22, 23]
    assert indices[20:].tolist() == [index for _, index in slow[4:]] == sources
    assert ratios[20:] == pytest.approx([r for r, _ in slow[4:]], rel=1e-3)
    monkeypatch.setattr(image_search, "FIRST_STEPS", ((0, 0),))
    unshifted, _, _ = image_search.nearest_edited_twins(scored, train, floor=floor, searched=(edit,), threshold=limit)
    assert np.sum(unshifted[20:] <= limit) == 2
