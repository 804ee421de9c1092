"""Every reproduction's library function by its ``fitaudit reproduce`` name: explicit imports into a plain dict.

The command line's parser names the reproductions without importing them
(:data:`fitaudit.cli.reproduce.REPRODUCTIONS`: help, modes, options); the
command imports this table when one runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fitaudit.experiments.examine import (
    reproduce_examiner_images,
    reproduce_examiner_planted,
    reproduce_examiner_renders,
    reproduce_examiner_table,
    reproduce_examiner_variants,
)
from fitaudit.experiments.overfit import (
    reproduce_overfit_imagefolder,
    reproduce_overfit_shapes,
    reproduce_overfit_synthetic,
)
from fitaudit.experiments.pmv import (
    reproduce_pmv_comparison,
    reproduce_pmv_mlp_width,
    reproduce_pmv_tree_depth,
)

#: name -> function taking ``mode``, ``checkpoint_dir``, ``random_state``, ``progress`` (and its own options)
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "overfit-synthetic": reproduce_overfit_synthetic,
    "overfit-shapes": reproduce_overfit_shapes,
    "overfit-imagefolder": reproduce_overfit_imagefolder,
    "pmv-comparison": reproduce_pmv_comparison,
    "pmv-tree-depth": reproduce_pmv_tree_depth,
    "pmv-mlp-width": reproduce_pmv_mlp_width,
    "examiner-table": reproduce_examiner_table,
    "examiner-renders": reproduce_examiner_renders,
    "examiner-planted": reproduce_examiner_planted,
    "examiner-variants": reproduce_examiner_variants,
    "examiner-images": reproduce_examiner_images,
}
