"""The JPEG lattice distance j (fitaudit.leakage.jpeg_lattice): tables and DCT against references, what j sees."""

from __future__ import annotations

import io

import numpy as np
import pytest
import scipy.fft

from fitaudit.leakage import image_features, image_search, image_space, jpeg_lattice

Image = pytest.importorskip("PIL.Image")


def jpeg(image: np.ndarray, quality: int) -> np.ndarray:
    """A grey image (H, W) in [0, 1] saved by Pillow as JPEG at ``quality`` and decoded, in [0, 1]."""
    buffer = io.BytesIO()
    Image.fromarray(np.clip(np.rint(image * 255), 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buffer.getvalue())), dtype=np.float32) / 255


def eight_bit(image: np.ndarray) -> np.ndarray:
    return (np.clip(np.rint(image * 255), 0, 255) / 255).astype(np.float32)


@pytest.mark.parametrize("quality", [50, 60, 75, 87, 95])
def test_the_tables_are_the_ones_pillow_writes(quality: int) -> None:
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((16, 16), dtype=np.uint8)).save(buffer, format="JPEG", quality=quality)
    written = np.array(Image.open(io.BytesIO(buffer.getvalue())).quantization[0]).reshape(8, 8)
    assert np.array_equal(jpeg_lattice.quantisation_table(quality), written)


def test_block_coefficients_equal_scipy_dct_block_by_block() -> None:
    rng = np.random.default_rng(0)
    images = rng.random((3, 3, 27, 21)).astype(np.float32)
    luma = np.einsum("c,nchw->nhw", np.array([0.299, 0.587, 0.114]), images.astype(np.float64))
    fast = jpeg_lattice.block_coefficients(images, offset=(2, 4))
    rows, cols = (27 - 2) // 8, (21 - 4) // 8
    assert fast.shape == (3, rows * cols, 64)
    for n in range(3):
        for r in range(rows):
            for c in range(cols):
                block = luma[n, 2 + 8 * r : 10 + 8 * r, 4 + 8 * c : 12 + 8 * c]
                expected = scipy.fft.dctn(block, norm="ortho").ravel()
                assert fast[n, r * cols + c] == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_at_most_eight_blocks_per_side_are_kept_spread_over_the_image() -> None:
    image = np.random.default_rng(1).random((1, 1, 100, 100)).astype(np.float32)
    kept = jpeg_lattice.block_coefficients(image)
    assert kept.shape == (1, 64, 64)  # 12 whole blocks per side: 8 of them, the first and the last among them
    picked = [0, 2, 3, 5, 6, 8, 9, 11]  # round(linspace(0, 11, 8))
    for place, (r, c) in enumerate([(r, c) for r in picked for c in picked]):
        block = image[0, 0, 8 * r : 8 * r + 8, 8 * c : 8 * c + 8].astype(np.float64)
        assert kept[0, place] == pytest.approx(scipy.fft.dctn(block, norm="ortho").ravel(), rel=1e-5, abs=1e-6)
    assert jpeg_lattice.block_coefficients(image[..., :7, :7]).shape == (1, 0, 64)


def naive_lattice(x: np.ndarray, y: np.ndarray, table: np.ndarray) -> float:
    """j of two images' coefficients (B, 64) at one table (64,), coefficient by coefficient."""
    total, counted = 0.0, 0
    for block_x, block_y in zip(x, y):
        for cx, cy, step in zip(block_x, block_y, table):
            on_lattice = round(float(cy) / float(step))
            if abs(cx) > jpeg_lattice.TRIVIAL or on_lattice != 0:
                error = min(abs(float(cx) - step * on_lattice), step / 2) / (step / 2)
                total, counted = total + error * error, counted + 1
    return total / counted if counted else float("inf")


def test_lattice_distances_equal_the_plain_loop_at_the_best_tried_table() -> None:
    rng = np.random.default_rng(2)
    queries = rng.normal(0, 30, (4, 6, 64))
    reference = rng.normal(0, 30, (5, 6, 64))
    candidates = np.array([[0, 1, 2, 3], [3, 4, -1, 0], [1, 1, 0, 2], [4, 3, 2, 1]])
    qualities = rng.integers(0, len(jpeg_lattice.QUALITIES), (4, 3))
    fast = jpeg_lattice.lattice_distances(queries, reference, candidates, qualities)
    for i in range(4):
        per_table = [[naive_lattice(queries[i], reference[c], jpeg_lattice.TABLES[t]) if c >= 0 else np.inf
                      for c in candidates[i]] for t in qualities[i]]
        judged = [min(row[:3]) for row in per_table]  # the table whose nearest of the first 3 fits best
        best = per_table[int(np.argmin(judged))]
        assert fast[i] == pytest.approx(best, rel=1e-5)  # float32 arithmetic


def textured(seed: int, size: int = 32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    smooth = np.cumsum(np.cumsum(rng.normal(0, 1, (size, size)), 0), 1)
    smooth = (smooth - smooth.min()) / np.ptp(smooth)
    return eight_bit(0.2 + 0.6 * smooth + rng.normal(0, 0.03, (size, size)))


@pytest.mark.parametrize("quality", [60, 75, 87])
def test_a_re_encoding_sits_on_its_source_lattice_and_another_image_does_not(quality: int) -> None:
    source, other = textured(3), textured(4)
    coefficients = jpeg_lattice.in_grey_levels(
        jpeg_lattice.block_coefficients(np.stack([jpeg(source, quality), source, other])[:, None]), 255.0)
    x, y = coefficients[:1], coefficients[1:]
    tried = jpeg_lattice.likely_qualities(x)
    assert quality in jpeg_lattice.QUALITIES[tried[0]]
    j = jpeg_lattice.lattice_distances(x, y, np.array([[0, 1]]), tried)[0]
    assert j[0] < 0.05  # the pixels' rounding
    assert j[1] > 0.2  # about 1/3: the errors spread over the half step


def test_the_value_scale_does_not_change_j() -> None:
    source = textured(5)
    unit = np.stack([jpeg(source, 75), source, textured(6)])[:, None]
    lattices = []
    for images, levels in ((unit, 255.0), (unit * 255, 1.0)):
        features = image_features(images)
        assert image_space.levels_per_unit(features) == levels
        lattices.append(image_search._Reference(features, 0.1).lattice)
    assert lattices[0] == pytest.approx(lattices[1], abs=1e-3)  # the same grey levels from either scale
    tried = jpeg_lattice.likely_qualities(lattices[0][:1])
    j = [jpeg_lattice.lattice_distances(lattice[:1], lattice[1:], np.array([[0, 1]]), tried)[0] for lattice in lattices]
    assert j[0] == pytest.approx(j[1], abs=1e-6) and j[0][0] < 0.05 < 0.2 < j[0][1]
    standardised = image_features((unit - 0.5) / 0.2)
    assert image_space.levels_per_unit(standardised) is None
    assert image_search._Reference(standardised, 0.1).lattice is None  # no grey levels: no j


def sky_world(n_train: int = 120, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Tiles of one featureless photo-like sky: a slow gradient and a grain of about 2 grey levels."""
    rng = np.random.default_rng(seed)
    side = size * int(np.ceil(np.sqrt(n_train)))
    rows, cols = np.mgrid[0:side, 0:side] / side
    sky = 0.55 + 0.05 * rows + 0.03 * cols + rng.normal(0, 2 / 255, (side, side))
    tiles = [sky[r : r + size, c : c + size] for r in range(0, side, size) for c in range(0, side, size)]
    return np.stack([eight_bit(t) for t in tiles[:n_train]])[:, None], rng.permutation(n_train)[:5]


def test_a_jpeg_of_a_featureless_crop_is_found_by_its_lattice_and_not_by_its_pixels() -> None:
    train, sources = sky_world()
    twins = np.stack([jpeg(train[s, 0], 75) for s in sources])[:, None]
    train_features, twin_features = image_features(train), image_features(twins)
    floor = image_space.contrast_floor(train_features.raw_views)
    r, index = image_search.nearest_twins(twin_features, train_features, floor=floor, relative=True)
    assert np.all(r <= image_search.RELATIVE_THRESHOLD) and np.array_equal(index, sources)
    without = image_space.ImageFeatures(twin_features.hashes, twin_features.work, twin_features.shape,
                                        fine=twin_features.fine)  # d and e alone
    r_pixels, _ = image_search.nearest_twins(without, train_features, floor=floor, relative=True)
    assert np.all(r_pixels > image_search.RELATIVE_THRESHOLD)


def test_clean_tiles_of_the_sky_are_not_flagged_by_the_lattice() -> None:
    train, _ = sky_world(seed=1)
    scored, _ = sky_world(n_train=60, seed=2)  # the same kind of sky, other grain: no twins
    scored = np.stack([jpeg(s[0], 75) for s in scored])[:, None]  # saved as JPEG, as photos are
    train_features = image_features(train)
    floor = image_space.contrast_floor(train_features.raw_views)
    r, _ = image_search.nearest_twins(image_features(scored), train_features, floor=floor, relative=True)
    assert np.mean(r <= image_search.RELATIVE_THRESHOLD) <= 0.02


def test_a_folder_of_jpeg_files_keeps_the_grid_of_its_files(tmp_path) -> None:
    """Files of 36 pixels through --resize 36 --crop 32: the crop starts 2 pixels in, the grid 6 pixels into it."""
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.leakage.folders import folder_features

    train, sources = sky_world(n_train=49, size=36, seed=3)
    for folder in ("train/a", "scored/a"):
        (tmp_path / folder).mkdir(parents=True)
    for i, tile in enumerate(train[:, 0]):
        Image.fromarray(np.rint(tile * 255).astype(np.uint8)).save(tmp_path / "train/a" / f"{i:02d}.png")
    for s in sources:
        Image.fromarray(np.rint(train[s, 0] * 255).astype(np.uint8)).save(tmp_path / "scored/a" / f"{s:02d}.jpg",
                                                                            quality=75)
    pipeline = EvalPipeline(resize=36, crop=32, mean=(0.0,), std=(1.0,))
    scored_features, _, _ = folder_features(open_images(tmp_path / "scored"), pipeline, name="--images")
    train_features, _, _ = folder_features(open_images(tmp_path / "train"), pipeline, name="--train-images")
    expected = jpeg_lattice.block_coefficients(decoded_files(tmp_path / "scored"), offset=(8, 8))
    assert scored_features.blocks == pytest.approx(expected, abs=1e-3)
    floor = image_space.contrast_floor(train_features.raw_views)
    r, index = image_search.nearest_twins(scored_features, train_features, floor=floor, relative=True)
    assert np.all(r <= image_search.RELATIVE_THRESHOLD)
    assert [train_features.names[i][-6:-4] for i in index] == [f"{s:02d}" for s in sorted(sources)]


def decoded_files(folder) -> np.ndarray:
    """The decoded files, whole: (n, 1, 36, 36) in [0, 1]; the crop's blocks are the files' from pixel 8 on."""
    files = sorted((folder / "a").iterdir())
    return np.stack([np.asarray(Image.open(f), dtype=np.float32) / 255 for f in files])[:, None]


def test_the_qualities_tried_are_the_least_misfit_each_with_its_own_dc_step() -> None:
    coefficients = np.random.default_rng(7).normal(0, 40, (3, 4, 64))
    tried = jpeg_lattice.likely_qualities(coefficients)
    for row, c in zip(tried, coefficients):
        counted = np.abs(c) > jpeg_lattice.TRIVIAL
        misfit = []
        for table in jpeg_lattice.TABLES:  # the plain formula, table by table
            in_steps = c / table - np.round(c / table)
            misfit.append(4 * np.sum(in_steps[counted] ** 2) / counted.sum())
        expected, seen = [], set()
        for t in np.argsort(misfit, kind="stable"):
            if jpeg_lattice.TABLES[t, 0] not in seen:
                expected.append(int(t))
                seen.add(jpeg_lattice.TABLES[t, 0])
        assert row.tolist() == expected[: jpeg_lattice.TOP_QUALITIES]
