"""The image operations the image-transform generator composes (:mod:`fitaudit.data.transforms`).

Each acts on a batch at once, one value per image: the bilinear affine warp
(:func:`warp`), the separable Gaussian blur (:func:`gaussian_blur`), the
occluding square's mask (:func:`occlusion_mask`), the JPEG round trip
(:func:`jpeg_round_trip`), the grey level (:func:`grey`) and the
counter-based noise (:func:`query_keys`, :func:`hashed_normals`: the same
query gives the same noise in any batch). The factors, their ranges and the
order they are applied in are in :mod:`fitaudit.data.transforms`.

Implementation: torch's ``grid_sample`` (the warp, one batched call for
every query whose geometry is not the identity) and a grouped separable
convolution (a per-query Gaussian kernel). kornia was tried for the blur;
its ``gaussian_blur2d`` refuses sigma = 0, the identity every examination
starts from, and its ``warp_affine`` wraps the same ``grid_sample`` with a
pixel-coordinate matrix that has to be built anyway for a canvas larger than
the output, so it would add a dependency without removing code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: splitmix64's constants (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
GOLDEN, MIX1, MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array (arithmetic modulo 2**64)."""
    x ^= x >> np.uint64(30)
    x *= MIX1
    x ^= x >> np.uint64(27)
    x *= MIX2
    x ^= x >> np.uint64(31)
    return x


def query_keys(random_state: int, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """One uint64 key per query: splitmix64 chained over (instance, bits of each factor value), from ``random_state``."""
    words = np.concatenate([np.asarray(instances, dtype=np.int64)[:, None].view(np.uint64),
                            np.ascontiguousarray(factors, dtype=np.float64).view(np.uint64)], axis=1)
    key = np.full(len(words), random_state, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in words.T:
            key = _mix((key ^ column) + GOLDEN)
    return key


def hashed_normals(keys: np.ndarray, size: int) -> np.ndarray:
    """Standard normals ``(n, size)`` (float32) of a counter-based generator keyed by ``keys`` (uint64).

    Pixels 2m and 2m + 1 of key k are the two Box-Muller normals
    ``sqrt(-2 ln u1) (cos, sin)(2 pi u2)`` of z = splitmix64(k + (m + 1) golden),
    with ``u1 = (z[40:64] + 1) / 2**24`` and ``u2 = z[16:40] / 2**24`` (24
    bits each, exact in float32). Every pixel of every query is computed
    independently, in one batched operation.
    """
    pairs = (size + 1) // 2
    with np.errstate(over="ignore"):
        z = _mix(np.asarray(keys, dtype=np.uint64)[:, None] + np.arange(1, pairs + 1, dtype=np.uint64)[None, :] * GOLDEN)
    u1 = ((z >> np.uint64(40)) + np.uint64(1)).astype(np.float32) / np.float32(1 << 24)
    u2 = ((z >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float32) / np.float32(1 << 24)
    radius, angle = np.sqrt(np.float32(-2.0) * np.log(u1)), np.float32(2.0 * np.pi) * u2
    out = np.empty((len(z), 2 * pairs), dtype=np.float32)
    out[:, 0::2], out[:, 1::2] = radius * np.cos(angle), radius * np.sin(angle)
    return out[:, :size]


#: ITU-R 601 luma weights (Pillow's RGB -> L conversion)
LUMA = (0.299, 0.587, 0.114)


def grey(torch: Any, x: Any) -> Any:
    """Grey level ``(n, 1, h, w)``: the luma of RGB images, the image itself for grey ones."""
    if x.shape[1] == 1:
        return x
    weights = torch.as_tensor(LUMA, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x * weights).sum(dim=1, keepdim=True)


def warp(torch: Any, canvas: Any, crop: tuple[int, int], rotation: np.ndarray, tx: np.ndarray, ty: np.ndarray,
          scale: np.ndarray) -> Any:
    """Bilinear affine warp of canvases ``(n, C, H, W)`` into their centre ``crop``.

    Output pixel p (relative to the crop's centre, x right, y down) samples
    the canvas at ``R(-theta) (p - t) / s`` relative to its centre: the image
    is scaled by s, rotated counter-clockwise by theta, then shifted by
    t = (tx w, ty h). Beyond the canvas the border is reflected.
    """
    h, w = crop
    big_h, big_w = canvas.shape[2:]
    theta = np.deg2rad(rotation)

    def column(values: np.ndarray) -> Any:
        return torch.as_tensor(values, dtype=torch.float64, device=canvas.device).view(-1, 1, 1)

    cos, sin = column(np.cos(theta) / scale), column(np.sin(theta) / scale)
    ys = (torch.arange(h, dtype=torch.float64, device=canvas.device) - (h - 1) / 2).view(1, h, 1)
    xs = (torch.arange(w, dtype=torch.float64, device=canvas.device) - (w - 1) / 2).view(1, 1, w)
    dx, dy = xs - column(tx * w), ys - column(ty * h)  # p - t, (n, h, w)
    # inverse map: src = [[cos, -sin], [sin, cos]] (p - t) / s (y down); align_corners=False: edges at +-1
    grid = torch.stack([(cos * dx - sin * dy) / (big_w / 2.0), (sin * dx + cos * dy) / (big_h / 2.0)], dim=-1)
    grid_t = grid.to(canvas.dtype)
    return torch.nn.functional.grid_sample(canvas, grid_t, mode="bilinear", padding_mode="reflection",
                                           align_corners=False)


def blur_radius(sigma_max: float, size: int) -> int:
    """Kernel radius of a batch: ``ceil(3 sigma_max)``, at most ``size - 1`` (reflection needs it)."""
    return int(min(max(1, int(np.ceil(3.0 * sigma_max))), size - 1))


def gaussian_blur(torch: Any, x: Any, sigma: np.ndarray) -> Any:
    """Separable Gaussian blur of ``x (n, C, h, w)``, one sigma > 0 per image, reflected border.

    Every image's kernel spans the batch's radius (:func:`blur_radius`) and
    sums to one (``scipy.ndimage.gaussian_filter`` with ``mode="mirror"`` and
    that radius is the reference).
    """
    n, c, h, w = x.shape
    radius = blur_radius(float(np.max(sigma)), min(h, w))
    offsets = np.arange(-radius, radius + 1, dtype=np.float64)
    kernel = np.exp(-0.5 * (offsets[None, :] / np.asarray(sigma, dtype=np.float64)[:, None]) ** 2)
    kernel /= kernel.sum(axis=1, keepdims=True)
    weights = torch.as_tensor(np.repeat(kernel, c, axis=0), dtype=x.dtype, device=x.device)  # (n C, k)
    flat = x.reshape(1, n * c, h, w)
    pad = torch.nn.functional.pad
    flat = torch.nn.functional.conv2d(pad(flat, (radius, radius, 0, 0), mode="reflect"),
                                      weights.view(n * c, 1, 1, -1), groups=n * c)
    flat = torch.nn.functional.conv2d(pad(flat, (0, 0, radius, radius), mode="reflect"),
                                      weights.view(n * c, 1, -1, 1), groups=n * c)
    return flat.view(n, c, h, w)


def occlusion_mask(crop: tuple[int, int], side: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Boolean masks ``(n, h, w)``: pixels whose centre lies inside the square.

    The square's side is ``side * min(h, w)`` px, its centre ``(u w, v h)``.
    """
    h, w = crop
    half = (np.asarray(side) * min(h, w) / 2.0)[:, None, None]
    ys = (np.arange(h) + 0.5)[None, :, None]
    xs = (np.arange(w) + 0.5)[None, None, :]
    inside_x = np.abs(xs - (np.asarray(u) * w)[:, None, None]) < half
    inside_y = np.abs(ys - (np.asarray(v) * h)[:, None, None]) < half
    return inside_x & inside_y


def jpeg_qualities(values: np.ndarray) -> np.ndarray:
    """The whole-number JPEG qualities of factor values (rounded half up, within [1, 100]; 100: not encoded)."""
    return np.clip(np.floor(np.asarray(values, dtype=np.float64) + 0.5), 1, 100).astype(np.int64)


def jpeg_round_trip(images: np.ndarray, qualities: np.ndarray) -> np.ndarray:
    """``images (n, C, h, w)`` in [0, 1] saved as 8-bit JPEG files (Pillow, its default 4:2:0 chroma
    subsampling for RGB) at ``qualities`` and read back, as float32 in [0, 1]: what a photograph saved
    at that quality holds."""
    import io

    from PIL import Image

    pixels = np.clip(np.rint(np.moveaxis(np.asarray(images, dtype=np.float64), 1, -1) * 255), 0, 255).astype(np.uint8)
    out = np.empty(images.shape, dtype=np.float32)
    for i, (image, quality) in enumerate(zip(pixels, np.asarray(qualities).tolist())):
        buffer = io.BytesIO()
        Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(buffer, format="JPEG", quality=int(quality))
        decoded = np.asarray(Image.open(io.BytesIO(buffer.getvalue())), dtype=np.float32) / 255
        out[i] = decoded[None] if decoded.ndim == 2 else np.moveaxis(decoded, -1, 0)
    return out
