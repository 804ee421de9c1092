"""Shared pieces of the PGDL winning entries (private): image augmentations,
clustering and margin statistics, graph smoothness.

Images are channels-first tensors ``(n, C, H, W)``; the entries' TensorFlow
operations (channels-last) are reproduced on that layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.measures import _torch as T

# ----------------------------------------------------------------------------- augmentations


def flip_left_right(x: Any) -> Any:
    """Mirror every image horizontally (``tf.image.flip_left_right``)."""
    return x.flip(-1)


def scale_saturation(x: Any, factor: float) -> Any:
    """``tf.image.adjust_saturation`` on RGB images: HSV saturation times ``factor``, clipped to [0, 1].

    Hue and value are kept, so each channel becomes ``V - min(factor, 1/S)
    (V - c)`` with ``V`` the channel maximum and ``S = (V - min) / V``.
    Images with one channel are returned unchanged (the entry converts
    grayscale to RGB and back, which leaves them as they were).
    """
    torch = T.torch_()
    if x.shape[1] != 3:
        return x.clone()
    v = x.max(dim=1, keepdim=True).values
    lo = x.min(dim=1, keepdim=True).values
    safe_v = torch.where(v > 0, v, torch.ones_like(v))
    s = torch.where(v > 0, (v - lo) / safe_v, torch.zeros_like(v))
    gain = torch.where(
        s > 0,
        torch.minimum(torch.full_like(s, factor), 1.0 / torch.clamp(s, min=1e-12)),
        torch.ones_like(s),
    )
    return v - gain * (v - x)


def central_crop_resize(x: Any, fraction: float = 0.9) -> Any:
    """``tf.image.central_crop(x, fraction)`` then ``resize_with_pad`` back to the input size.

    The crop starts at ``int((H - H f) / 2)`` (as TensorFlow); the crop is
    resized (bilinear, half-pixel centres) to fit, keeping its aspect ratio,
    and padded with zeros to ``(H, W)``.
    """
    torch = T.torch_()
    h, w = x.shape[-2:]
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    crop = x[..., top : h - top, left : w - left]
    ch, cw = crop.shape[-2:]
    ratio = min(h / ch, w / cw)
    nh, nw = max(1, int(ch * ratio)), max(1, int(cw * ratio))
    resized = torch.nn.functional.interpolate(
        crop, size=(nh, nw), mode="bilinear", align_corners=False
    )
    ph, pw = (h - nh) // 2, (w - nw) // 2
    return torch.nn.functional.pad(resized, (pw, w - nw - pw, ph, h - nh - ph))


def sobel_dx(x: Any) -> Any:
    """Horizontal Sobel response per channel / 4 + 0.5 (``tf.image.sobel_edges(x)[..., 1] / 4 + 0.5``).

    Kernel ``[[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]`` (cross-correlation),
    reflect padding, as TensorFlow.
    """
    torch = T.torch_()
    c = x.shape[1]
    kernel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=x.dtype, device=x.device)
    weight = kernel.expand(c, 1, 3, 3).contiguous()
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
    return torch.nn.functional.conv2d(padded, weight, groups=c) / 4 + 0.5


def adjust_brightness(x: Any, delta: float = 0.5) -> Any:
    """``tf.image.adjust_brightness``: add ``delta`` to every value."""
    return x + delta


def random_erase(
    x: Any, rng: np.random.Generator, sl: float = 0.02, sh: float = 0.4, r1: float = 0.3
) -> Any:
    """Zero one random rectangle per image (the second-place entry's ``random_erase_np_v2``).

    Side lengths uniform in ``[round(sqrt(sl A r1)), min(round(sqrt(sh A / r1)), side))``
    (A = H W), top-left corner uniform in ``[0, side - length)``. Drawn by
    ``rng`` on the host (the same rectangles on every device), zeroed where
    ``x`` lies by one mask.
    """
    torch = T.torch_()
    h, w = x.shape[-2:]
    area = h * w
    low = int(np.round(np.sqrt(sl * area * r1)))
    high = int(np.round(np.sqrt(sh * area / r1)))
    h_high, w_high = min(high, h), min(high, w)
    boxes = np.zeros((4, x.shape[0]), dtype=np.int64)  # top, bottom, left, right: drawn in the entry's order
    for i in range(x.shape[0]):
        eh = int(rng.integers(low, h_high)) if h_high > low else min(low, h - 1)
        ew = int(rng.integers(low, w_high)) if w_high > low else min(low, w - 1)
        top = int(rng.integers(0, h - eh)) if h - eh > 0 else 0
        left = int(rng.integers(0, w - ew)) if w - ew > 0 else 0
        boxes[:, i] = (top, top + eh, left, left + ew)
    top, bottom, left, right = torch.as_tensor(boxes, device=x.device)[:, :, None, None, None]
    rows = torch.arange(h, device=x.device)[:, None]
    cols = torch.arange(w, device=x.device)[None, :]
    inside = (rows >= top) & (rows < bottom) & (cols >= left) & (cols < right)  # (n, 1, h, w)
    return x.masked_fill(inside, 0.0)


def random_contrast(x: Any, rng: np.random.Generator, low: float = 0.7, high: float = 1.0) -> Any:
    """``tf.image.random_contrast`` per image: ``(x - mean) f + mean``, mean per channel, f ~ U[low, high)."""
    torch = T.torch_()
    f = torch.as_tensor(rng.uniform(low, high, size=(x.shape[0], 1, 1, 1)), dtype=x.dtype, device=x.device)
    mean = x.mean(dim=(-2, -1), keepdim=True)
    return (x - mean) * f + mean


def random_zoom(x: Any, rng: np.random.Generator) -> Any:
    """Half of the images: a centred crop of scale in {0.85, ..., 0.99} resized back (bilinear).

    The first-place entry's ``DataAugmentor.zoom`` (``tf.image.crop_and_resize``
    with normalised box ``0.5 -+ s/2``, whose sampling grid is the box's
    corners-aligned grid). Drawn by ``rng`` on the host in the entry's order
    (per image a coin, then its scale: the same zooms on every device); the
    zoomed images are resampled where ``x`` lies by one ``grid_sample`` call,
    each on its scale's grid (:func:`zoom_grid`).
    """
    torch = T.torch_()
    scales = np.arange(0.85, 1.0, 0.01)
    drawn = np.full(x.shape[0], -1)  # index into scales, -1: not zoomed
    for i in range(x.shape[0]):
        if rng.uniform() >= 0.5:
            drawn[i] = int(rng.integers(0, len(scales)))
    rows = np.flatnonzero(drawn >= 0)
    out = x.clone()
    if len(rows):
        used, which = np.unique(drawn[rows], return_inverse=True)
        grids = torch.stack([zoom_grid(x, float(scales[k])) for k in used])[torch.as_tensor(which, device=x.device)]
        index = torch.as_tensor(rows, device=x.device)
        out[index] = torch.nn.functional.grid_sample(x[index], grids, mode="bilinear", align_corners=True)
    return out


def zoom_grid(x: Any, scale: float) -> Any:
    """``grid_sample``'s grid ``(H, W, 2)`` of a centred zoom by ``scale`` of images like ``x`` (corners aligned)."""
    torch = T.torch_()
    h, w = x.shape[-2:]
    gy = torch.linspace(-scale, scale, h, dtype=x.dtype, device=x.device)
    gx = torch.linspace(-scale, scale, w, dtype=x.dtype, device=x.device)
    yy, xx = torch.meshgrid(gy, gx, indexing="ij")
    return torch.stack([xx, yy], dim=-1)


def standard_augment(x: Any, rng: np.random.Generator) -> Any:
    """The first-place entry's "standard" augmentation: random flip, random contrast, random zoom."""
    torch = T.torch_()
    flips = torch.as_tensor(rng.uniform(size=x.shape[0]) < 0.5, device=x.device)
    x = torch.where(flips[:, None, None, None], x.flip(-1), x)
    return random_zoom(random_contrast(x, rng), rng)


def require_images(x: np.ndarray, name: str) -> None:
    """Image augmentations need ``(n, C, H, W)`` inputs."""
    if x.ndim != 4:
        raise InputError(
            f"measure {name!r} augments images and needs `record.train_x` of shape (m, C, H, W); got shape {x.shape}."
        )


# ----------------------------------------------------------------------------- clustering


def davies_bouldin(features: np.ndarray, labels: np.ndarray) -> float:
    """Davies-Bouldin index (Davies & Bouldin 1979): mean over clusters of max_j (S_i + S_j) / M_ij.

    ``S_i`` the mean distance of cluster i's points to its centroid, ``M_ij``
    the distance between centroids (scikit-learn's definition; identical
    centroids count as infinitely far, as there). The first-place entry's
    own copy averages over ``j`` (``nanmean``) where the definition takes
    the maximum; we keep the definition.
    """
    classes = np.unique(labels)
    if len(classes) < 2:
        raise InputError(
            "the Davies-Bouldin index needs at least 2 classes among the sampled examples."
        )
    feats = np.asarray(features, dtype=np.float64)
    centroids = np.stack([feats[labels == c].mean(axis=0) for c in classes])
    spread = np.array(
        [
            np.linalg.norm(feats[labels == c] - centroids[i], axis=1).mean()
            for i, c in enumerate(classes)
        ]
    )
    dist = np.linalg.norm(centroids[:, None, :] - centroids[None, :, :], axis=-1)
    if np.allclose(spread, 0) or np.allclose(dist, 0):
        return 0.0
    dist[dist == 0] = np.inf
    ratio = (spread[:, None] + spread[None, :]) / dist
    return float(ratio.max(axis=1).mean())


# ----------------------------------------------------------------------------- margins


def five_number_mean(values: np.ndarray) -> float:
    """Mean of the first-place entry's five-number summary of a margin distribution.

    ``[f_l, q1, q2, q3, f_u]``: quartiles, and as "fences" the largest
    value below ``q1 - 1.5 IQR`` (the minimum when none) and the smallest
    value above ``q3 + 1.5 IQR`` (the maximum when none), as its
    ``computeQuantiles``.
    """
    d = np.asarray(values, dtype=float)
    q1, q2, q3 = np.percentile(d, [25, 50, 75])
    iqr = q3 - q1
    below, above = d[d < q1 - 1.5 * iqr], d[d > q3 + 1.5 * iqr]
    f_l = below.max() if below.size else d.min()
    f_u = above.min() if above.size else d.max()
    return float(np.mean([f_l, q1, q2, q3, f_u]))


def representation_margins(
    model: Any, module: Any, x: Any, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """First-order margin distance at ``module``'s output (Elsayed et al. 2018) and the representations.

    Per example, with ``i`` the top logit and ``j`` the runner-up when the
    prediction is right, and ``i`` = true class, ``j`` = predicted class when
    it is wrong (negative margins: the entry's ``penalize=True``):
    ``(z_i - z_j) / (||d(z_i - z_j)/dh||_2 + 1e-7)``.
    """
    torch = T.torch_()
    store: list[Any] = []

    def hook(mod: Any, inp: Any, out: Any) -> Any:
        leaf = out.detach().requires_grad_(True)
        store.append(leaf)
        return leaf

    handle = module.register_forward_hook(hook)
    try:
        logits = model(x)
    finally:
        handle.remove()
    h = store[0]
    top2 = torch.topk(logits.detach(), 2, dim=1).indices.cpu().numpy()
    yy = np.asarray(y)
    right = top2[:, 0] == yy
    first = np.where(right, top2[:, 0], yy)
    second = np.where(right, top2[:, 1], top2[:, 0])
    rows = torch.arange(len(yy), device=logits.device)
    diff = logits[rows, torch.as_tensor(first, device=logits.device)] - logits[rows, torch.as_tensor(second, device=logits.device)]
    (grad,) = torch.autograd.grad(diff.sum(), h)
    denom = T.host(grad.reshape(len(yy), -1).double().norm(dim=1))
    return T.host(diff) / (denom + 1e-7), T.host(h.reshape(len(yy), -1))


def trimmed_feature_scale(features: np.ndarray) -> float:
    """sqrt of the 5%-trimmed mean of the per-feature variances (the entry's normaliser)."""
    from scipy.stats import trim_mean

    return float(np.sqrt(trim_mean(np.var(features, axis=0), proportiontocut=0.05)))


# ----------------------------------------------------------------------------- graphs


def knn_laplacian(features: np.ndarray) -> np.ndarray:
    """Normalised Laplacian of the 1-nearest-neighbour graph of the third-place entry.

    Rows L2-normalised; squared distances ``D``; RBF similarities
    ``exp(-D / (3 std(D)))`` (std over all entries); each node linked to its
    most similar other node (the entry's ``knn_tf`` with k = 1: every entry
    at least the row's second-largest similarity, diagonal cleared; binary,
    not symmetrised); ``L = I - Deg^-1/2 A Deg^-1/2`` with row degrees.
    """
    v = np.asarray(features, dtype=np.float64).reshape(len(features), -1)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.maximum(norms, 1e-12)
    sq = (v**2).sum(axis=1)
    dist = sq[:, None] - 2 * v @ v.T + sq[None, :]
    std = float(np.std(dist))
    sim = np.exp(-dist / (3 * std)) if std > 0 else np.ones_like(dist)
    threshold = np.sort(sim, axis=1)[:, -2][:, None]
    adj = (sim >= threshold).astype(np.float64)
    np.fill_diagonal(adj, 0.0)
    degree = adj.sum(axis=1)
    inv_sqrt = np.where(degree > 0, 1.0 / np.sqrt(np.maximum(degree, 1e-12)), 0.0)
    return np.eye(len(v)) - inv_sqrt[:, None] * adj * inv_sqrt[None, :]


def label_variation(laplacian: np.ndarray, targets: np.ndarray) -> float:
    """trace(Y^T L Y) / (4 n), clipped to [0, 1000] (the entry's ``smoothness``)."""
    value = float(np.trace(targets.T @ laplacian @ targets)) / (4 * len(targets))
    return float(np.clip(value, 0.0, 1000.0))
