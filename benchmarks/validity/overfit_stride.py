"""Shifts beyond the augmentation and power at ordinary sizes: the translational AEG with a stride, on real photos.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and 5: the pairwise
test on T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) with the strongest
translational AEG, ``h_g = 1 / (1 + n(x'))`` valid under (G3), which the G3
check tests on every sample first. ``TranslationAEG(stride=s)`` uses the
shifts ``s V_eps`` (shifts of s, 2 s, ... pixels; the paper's weight over
that symmetric set, :mod:`fitaudit.overfit.translation`). Issue 50 asks two
things of it: shifts no random-crop augmentation covers (``s`` larger than
the augmentation's ``a`` = 3 px), so that an augmented CNN's own training
crops are rejected; and more answers changed by the shifts, so that an
unseen sample's pass can state its power at m = 600.

World (:mod:`photo_world`): eight of scikit-image's photographs, one class
each, grey, at :data:`SCALE` / 66 times their own size (twice: at their own
size a 32-px crop holds so much of its photo that the fresh crops of the
training halves are nearly the training crops, and a CNN trained to
convergence there has error 0.023 on its training crops against 0.057 on
fresh ones, seed 0: next to nothing to detect); canvases of 32 + 2 P pixels (P = 24, so
that eps stride <= 8) at uniformly random places, training canvases from the
top half of each photo, unseen ones from the bottom half (crops of larger
scenes: (G3) holds), and fresh canvases from the top halves (the training
crops' own distribution: the model's error there is the risk the test's R_g
estimates). Per seed, two small CNNs (3 convolutions, global average
pooling, Adam 3e-3 falling along a cosine to 0, :data:`EPOCHS` epochs, batch
64; one thread and deterministic kernels, so that a seed's weights are the
same in every run: ``--reproduce``) on the same :data:`N` training canvases:

* ``augmented``: a crop at a random offset of up to 3 px per axis and a
  random horizontal flip, drawn anew every time (the usual augmentation);
* ``plain``: the centre crops.

The test (delta 0.05) runs with each AEG of :data:`AEGS` on the training
canvases (``fail``: the dependence caught) and on :data:`N` unseen ones
(``fail``: a false alarm; ``pass`` states power only where the shifts can
reach the detectable T). One fixed AEG per run is one test: choosing among
them after seeing the p-values would need a Bonferroni correction (the
smallest p-value times the number tried). :func:`pooled_table` reads the
strided AEGs (:data:`POOLED`) as that union: a sample is rejected where one
of the k rejects at delta / k (the chance that any of k tests at delta / k
rejects an independent sample is at most delta), and a pass states power
where one of them reaches the T it detects at delta / k.

The smallest detectable T (:func:`fitaudit.overfit.power.detectable_statistic`)
at m = 300, 600, 1,000 and 2,000 is computed from each unseen sample's
spread of the T_i (without the part an observed T adds) and compared with
the largest T its shifts can reach (1/2 per changed answer, a share that
does not depend on m).

The rows of the runs before the training was made reproducible (60 epochs
at a constant rate, photos at their own size), which today's code does not
reproduce, are kept in ``results/overfit_stride_before.jsonl`` and ``.txt``.

Resumable: every (seed, model) run is a line of ``results/overfit_stride.jsonl``;
a rerun skips them, and runs only the AEGs a line lacks on the network kept
in :data:`CACHE`. Needs scikit-image (the photographs). Run:
``python benchmarks/validity/overfit_stride.py [--seeds 10] [--part K/N] [--report] [--reproduce SEED KIND]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from photo_world import canvases as photo_canvases  # noqa: E402
from photo_world import cnn, fit, photos, random_crops  # noqa: E402

RESULTS = Path(__file__).parent / "results"
ROWS = RESULTS / "overfit_stride.jsonl"
#: the trained networks (state dicts), outside the repository
CACHE = Path.home() / ".cache" / "fitaudit-benchmarks" / "overfit_stride"
CROP, MARGIN, AUGMENT = 32, 24, 3
N, EPOCHS, DELTA = 600, 120, 0.05
#: the photographs' scale (:func:`photo_world.photos`: 66 keeps them at their own size, 132 doubles them)
SCALE = 132
#: every training setting, in the name of a cached network and in every row
SETTINGS = f"e{EPOCHS}-cosine-scale{SCALE}-p{MARGIN}"
#: (eps, stride, mirror): the paper's contiguous shifts of 1 px (inside the augmentation), shifts of 4 and 8 px
#: (beyond it), and those with their mirror images (shifts of 2-6 px, eps 3 stride 2, changed fewer answers than
#: eps 2 stride 4 on seed 0 at twice the cost, and are left out)
AEGS = ((1, 1, False), (2, 4, False), (2, 4, True), (1, 8, True))
SIZES = (300, 600, 1000, 2000)
#: the AEGs beyond the 1-px shifts, pooled by a Bonferroni union in :func:`pooled_table`
POOLED = AEGS[1:]


def canvases(n: int, half: int, seed: int, scaled: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``n`` grey canvases (n, 1, 80, 80), 8-bit values in [0, 1], from the top (0, 2) or bottom (1) halves
    (:func:`photo_world.canvases`)."""
    return photo_canvases(scaled, n, half, seed, CROP + 2 * MARGIN)


def train(x: np.ndarray, y: np.ndarray, *, augmented: bool, seed: int, epochs: int) -> Any:
    """The CNN (:func:`photo_world.cnn`) on the centre crops, or on random crops of up to AUGMENT px and flips
    (module docstring; :func:`photo_world.random_crops`), the learning rate falling along a cosine to 0. One
    thread and deterministic kernels: the same seed gives the same weights (:func:`weights_digest`)."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(seed)
    rng = np.random.default_rng([seed, 7])
    return fit(cnn(), y, lambda rows: random_crops(x, rows, rng, margin=MARGIN, crop=CROP,
                                                   augment=AUGMENT if augmented else 0),
               epochs=epochs, rng=rng, cosine=True)


def weights_digest(net: Any) -> str:
    """The first 16 hex digits of the SHA-256 of the network's parameters and buffers, in order."""
    import hashlib

    state = net.state_dict()
    return hashlib.sha256(b"".join(state[k].detach().cpu().numpy().tobytes() for k in state)).hexdigest()[:16]


def model_for(seed: int, kind: str, train_set: tuple[np.ndarray, np.ndarray]) -> Any:
    """The trained CNN of a seed and kind, kept in :data:`CACHE` (its state dict, keyed by every training
    setting) so that AEGs added later are run on the same network without training it again."""
    import torch

    path = CACHE / f"{seed}-{kind}-{SETTINGS}.pt"
    if path.exists():
        net = cnn()
        net.load_state_dict(torch.load(path))
        return net.eval()
    net = train(*train_set, augmented=kind == "augmented", seed=seed, epochs=EPOCHS)
    CACHE.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), path)
    return net


def aeg_key(aeg: tuple[int, int, bool]) -> str:
    return f"eps {aeg[0]} stride {aeg[1]}" + (" + flip" if aeg[2] else "")


def one_run(seed: int, kind: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """Train one model (or read it from the cache); run the test with every AEG not yet in ``row`` on its training
    canvases and on unseen ones."""
    import torch

    from fitaudit.models import as_classifier
    from fitaudit.overfit import TranslationAEG, overfit_test
    from fitaudit.overfit.mirror import MirrorTranslationAEG
    from fitaudit.overfit.translation import centre_crop
    from fitaudit.report.verdicts import say_overfit

    torch.set_num_threads(1)
    start = time.perf_counter()
    scaled = photos(SCALE, False)
    samples = {"train": canvases(N, 0, seed, scaled), "unseen": canvases(N, 1, seed, scaled)}
    net = model_for(seed, kind, samples["train"])
    model = as_classifier(net, n_classes=8)
    if row is None:
        fresh_x, fresh_y = canvases(
            N, 2, seed, scaled
        )  # top halves again: the training crops' distribution
        row = {
            "seed": seed,
            "model": kind,
            "n": N,
            "settings": SETTINGS,
            "weights": weights_digest(net),
            "tests": [],
            "seconds": 0.0,
            "fresh_error": float(np.mean(model.predict(centre_crop(fresh_x, MARGIN)) != fresh_y)),
        }
    have = {(t["aeg"], t["sample"]) for t in row["tests"]}
    for eps, stride, mirror in AEGS:
        aeg = (MirrorTranslationAEG if mirror else TranslationAEG)(
            eps=eps, margin=MARGIN, stride=stride
        )
        for sample, (x, y) in samples.items():
            if (aeg_key((eps, stride, mirror)), sample) in have:
                continue
            result = overfit_test(model, x, y, aeg, delta=DELTA)
            verdict = result.verdict(role="test")
            sentence = say_overfit(result, verdict)
            row["tests"].append(
                {
                    "aeg": aeg_key((eps, stride, mirror)),
                    "eps": eps,
                    "stride": stride,
                    "sample": sample,
                    "pvalue": result.pvalue,
                    "reject": bool(result.reject),
                    "status": verdict.status,
                    "reason": verdict.reason,
                    "risk_plain": result.risk_plain,
                    "statistic": result.statistic,
                    "variance": result.pairwise.variance,
                    "n_success": int(result.n_success),
                    "g3_pvalue": result.g3.pvalue,
                    "g3_violated": result.g3.violated,
                    "headline": sentence.split(". ")[0],
                    "says_risk_estimate": "risk estimate" in sentence,
                }
            )
    row["seconds"] += time.perf_counter() - start
    return row


def read_rows() -> list[dict[str, Any]]:
    """The finished runs, the last line of each (seed, model) winning."""
    rows = [json.loads(line) for line in ROWS.read_text().splitlines()] if ROWS.exists() else []
    return list({(r["seed"], r["model"]): r for r in rows}.values())


def train_error(row: dict[str, Any]) -> float:
    """The model's error on its training canvases (the same in every test of the row)."""
    return next(t["risk_plain"] for t in row["tests"] if t["sample"] == "train")


def _mean(values: list[float]) -> str:
    """The mean to 3 places, or "-" for none (the flipped AEG is not run on the training canvases)."""
    return f"{np.mean(values):.3f}" if values else "-"


def table(rows: list[dict[str, Any]]) -> str:
    """Per model and AEG: errors, rejections of the training canvases, verdicts on the unseen ones."""
    head = (
        f"{'model':<10} {'AEG':<22} {'runs':>4} {'train err':>9} {'fresh err':>9} {'unseen err':>10} "
        f"{'train fail':>14} {'train T':>7} {'train shifted':>13} {'unseen f/p/i':>12} "
        f"{'unseen shifted':>14} {'G3 void':>7} {'risk est.':>9}"
    )
    lines = [head, "-" * len(head)]
    for kind in ("augmented", "plain"):
        for aeg in AEGS:
            mine = [
                r
                for r in rows
                if r["model"] == kind and any(t["aeg"] == aeg_key(aeg) for t in r["tests"])
            ]
            tests = [t for r in mine for t in r["tests"] if t["aeg"] == aeg_key(aeg)]
            if not tests:
                continue
            train = [t for t in tests if t["sample"] == "train"]
            unseen = [t for t in tests if t["sample"] == "unseen"]
            verdicts = "/".join(
                str(sum(t["status"] == s for t in unseen)) for s in ("fail", "pass", "inconclusive")
            )
            lines.append(
                f"{kind:<10} {aeg_key(aeg):<22} {len(mine):>4} "
                f"{_mean([train_error(r) for r in mine]):>9} {_mean([r['fresh_error'] for r in mine]):>9} "
                f"{_mean([t['risk_plain'] for t in unseen]):>10} "
                f"{sum(t['status'] == 'fail' for t in train):>9}/{len(train):<4} "
                f"{_mean([t['statistic'] for t in train]):>7} "
                f"{_mean([t['n_success'] / N for t in train]):>13} {verdicts:>12} "
                f"{np.mean([t['n_success'] for t in unseen]) / N:>14.3f} "
                f"{sum(t['g3_violated'] for t in tests):>3}/{len(tests):<3} "
                f"{sum(t.get('says_risk_estimate', False) for t in tests):>5}/{len(tests):<3}"
            )
    return "\n".join(lines)


def power_table(rows: list[dict[str, Any]]) -> str:
    """The smallest detectable T at each m from the unseen samples' spread, against the T their shifts reach."""
    from fitaudit.overfit.power import base_variance, detectable_statistic, reachable_statistic

    head = (
        f"{'model':<10} {'AEG':<22} {'reachable T':>11} "
        + " ".join(f"{f'det. T m={m}':>13}" for m in SIZES)
        + "   "
        + " ".join(f"{f'power m={m}':>11}" for m in SIZES)
    )
    lines = [head, "-" * len(head)]
    for kind in ("augmented", "plain"):
        for aeg in AEGS:
            unseen = [
                t
                for r in rows
                if r["model"] == kind
                for t in r["tests"]
                if (t["aeg"], t["sample"]) == (aeg_key(aeg), "unseen")
            ]
            if not unseen:
                continue
            reach = [reachable_statistic(t["n_success"], N, 1.5) for t in unseen]
            detect = {
                m: [
                    detectable_statistic(
                        m, base_variance(t["statistic"], t["variance"], 1.5), DELTA, 1.5
                    )
                    for t in unseen
                ]
                for m in SIZES
            }
            shown = {
                m: sum(
                    d is not None and r >= d and not t["g3_violated"]
                    for r, d, t in zip(reach, detect[m], unseen)
                )
                for m in SIZES
            }
            lines.append(
                f"{kind:<10} {aeg_key(aeg):<22} {np.median(reach):>11.3f} "
                + " ".join(
                    f"{np.median([d for d in detect[m] if d is not None]):>13.3f}" for m in SIZES
                )
                + "   "
                + " ".join(f"{f'{shown[m]}/{len(unseen)}':>11}" for m in SIZES)
            )
    return "\n".join(lines)


def pooled_table(rows: list[dict[str, Any]]) -> str:
    """The Bonferroni union of the strided AEGs (:data:`POOLED`): a sample is rejected where one of them rejects at
    DELTA / k with its G3 check not rejecting; an unseen sample's pass states power where one of them (G3 not
    rejected) reaches the T it detects at DELTA / k."""
    from fitaudit.overfit.power import base_variance, detectable_statistic, reachable_statistic

    keys, level = [aeg_key(a) for a in POOLED], DELTA / len(POOLED)
    lines = []
    for kind in ("augmented", "plain"):
        mine = [r for r in rows if r["model"] == kind and {aeg_key(a) for a in POOLED} <= {t["aeg"] for t in r["tests"]}]
        if not mine:
            continue
        counts = {}
        for sample in ("train", "unseen"):
            tests = [[t for t in r["tests"] if t["sample"] == sample and t["aeg"] in keys] for r in mine]
            counts[sample] = sum(any(t["pvalue"] < level and not t["g3_violated"] for t in run) for run in tests)
            if sample == "unseen":
                counts["power"] = {m: sum(
                    not any(t["pvalue"] < level for t in run) and any(
                        not t["g3_violated"]
                        and (d := detectable_statistic(m, base_variance(t["statistic"], t["variance"], 1.5), level,
                                                       1.5)) is not None
                        and reachable_statistic(t["n_success"], N, 1.5) >= d for t in run) for run in tests)
                    for m in SIZES}
        lines.append(f"{kind}: training samples rejected {counts['train']}/{len(mine)}, unseen samples rejected (false "
                     f"alarms) {counts['unseen']}/{len(mine)}; unseen passes that state power at m = "
                     + ", ".join(f"{m}: {counts['power'][m]}/{len(mine)}" for m in SIZES))
    return (f"Pooled by Bonferroni over the {len(POOLED)} strided AEGs ({', '.join(keys)}), each at delta / "
            f"{len(POOLED)} = {level:.4f}:\n" + "\n".join(lines))


def report(rows: list[dict[str, Any]]) -> str:
    seeds = sorted({r["seed"] for r in rows})
    return (
        f"Overfitting test (strongest translational AEG, margin {MARGIN}, delta {DELTA}, G3 check on every sample) on "
        f"small CNNs trained {EPOCHS} epochs (learning rate 3e-3 along a cosine to 0) on {N} grey 32-px crops of eight "
        f"photographs at {SCALE / 66:g} times their size (top halves): augmented "
        f"(random crops of up to {AUGMENT} px and horizontal flips) and plain (centre crops); seeds {seeds}.\n"
        "AEG: shifts stride x u, ||u||_inf <= eps, u != 0 (eps 1 stride 1: the paper's 1-px shifts). "
        "train/fresh/unseen err: error on the training canvases, on fresh top-half canvases (the training "
        "distribution) and on bottom-half ones (mean); train fail: training samples whose verdict is fail (the "
        "test rejects and neither the G3 check nor the chance stop voids it: the dependence caught); train T: R_g - R_S there (mean); shifted: share of a sample whose answer a shift turns "
        "from right to wrong (mean); unseen f/p/i: verdicts on the unseen samples (a fail is a false alarm, a pass "
        "states its power, inconclusive: the shifts change too few answers, or G3 void); G3 void: samples (both) "
        "where the G3 check rejected G3; risk est.: verdict sentences (both samples) that call the error rate a risk "
        "estimate (none may, without a control).\n\n"
        + table(rows)
        + "\n\nPower on the unseen samples: reachable T, the largest T their shifts allow (median); det. T m=...: the "
        "smallest E[T] the pairwise test rejects with 80% power at that m, from the sample's own spread of the T_i "
        "(median over samples); power m=...: unseen samples whose pass would state power at that m (reachable T >= "
        "detectable T, G3 not rejected). The share of answers the shifts change does not depend on m; the spread "
        "is the sample's at m = 600.\n\n" + power_table(rows) + "\n\n" + pooled_table(rows)
    )


def reproduce(seed: int, kind: str) -> str:
    """Train the network of ``seed`` and ``kind`` twice afresh (no cache) and compare the weights and the error on
    fresh canvases with each other and with the row of ``results/overfit_stride.jsonl``."""
    from fitaudit.models import as_classifier
    from fitaudit.overfit.translation import centre_crop

    scaled = photos(SCALE, False)
    train_set, (fresh_x, fresh_y) = canvases(N, 0, seed, scaled), canvases(N, 2, seed, scaled)
    found = []
    for _ in range(2):
        net = train(*train_set, augmented=kind == "augmented", seed=seed, epochs=EPOCHS)
        error = float(np.mean(as_classifier(net, n_classes=8).predict(centre_crop(fresh_x, MARGIN)) != fresh_y))
        found.append((weights_digest(net), error))
    row = {(r["seed"], r["model"]): r for r in read_rows()}.get((seed, kind))
    recorded = "no row" if row is None else f"{row['weights']}, fresh error {row['fresh_error']:.4f}"
    cached = weights_digest(model_for(seed, kind, train_set)) if (CACHE / f"{seed}-{kind}-{SETTINGS}.pt").exists() \
        else "none"
    return (f"seed {seed} {kind}, trained twice: weights {found[0][0]} / {found[1][0]}, fresh error "
            f"{found[0][1]:.4f} / {found[1][1]:.4f}; the cached network: {cached}; the jsonl row: {recorded}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="training seeds (default 10)")
    parser.add_argument("--report", action="store_true", help="only read the finished runs")
    parser.add_argument("--reproduce", nargs=2, metavar=("SEED", "KIND"),
                        help="train one network twice afresh and compare it with its row")
    parser.add_argument("--part", default="0/1", help="K/N: run only the seeds s with s %% N == K (default 0/1)")
    args = parser.parse_args()
    if args.reproduce:
        print(reproduce(int(args.reproduce[0]), args.reproduce[1]))
        return
    if not args.report:
        done = {(r["seed"], r["model"]): r for r in read_rows()}
        k, n = (int(v) for v in args.part.split("/"))
        for kind in ("plain", "augmented"):  # every plain network first: the done-when's targets are on them
            for seed in range(k, args.seeds, n):
                old = done.get((seed, kind))
                wanted = {(aeg_key(a), sample) for a in AEGS for sample in ("train", "unseen")}
                if old is not None and {(t["aeg"], t["sample"]) for t in old["tests"]} >= wanted:
                    continue
                row = one_run(seed, kind, old)
                with ROWS.open("a") as out:
                    out.write(json.dumps(row) + "\n")
                print(f"# seed {seed} {kind}: {row['seconds']:.0f} s", flush=True)
    text = report(read_rows())
    print(text)
    (RESULTS / "overfit_stride.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
