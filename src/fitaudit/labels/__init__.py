"""Are the scored labels right? Label problems of the scored rows (user guide: docs/labels.md).

* :func:`find_label_problems` -- confident learning on the model's
  out-of-sample probabilities (cleanlab's ``find_label_issues``) and exact
  conflicting labels, with what correcting them does to the accuracy
  interval (:class:`LabelResult`).

Needs cleanlab (``pip install 'fitaudit[labels]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from fitaudit.labels.result import LabelResult, find_label_problems

__all__ = ["LabelResult", "find_label_problems"]

__getattr__, __dir__ = lazy_exports(__name__, {"LabelResult": "result", "find_label_problems": "result"})
