"""XGBoost and LightGBM model files checked in Python before their native library reads them.

Both libraries trust their own files: a truncated LightGBM ``.txt``, a
``tree_sizes=`` line that does not match the trees, or a tree whose arrays
disagree with its ``num_leaves`` crash the process (SIGSEGV, or an abort in
C++); an XGBoost ``.json`` or ``.ubj`` nested a million levels deep
overflows the native parser's stack. The checks here read the structure
first and refuse such a file in one line naming it:

* LightGBM text: the header's counts (``num_class``, ``num_tree_per_iteration``,
  ``max_feature_idx`` against the feature names), ``tree_sizes`` against the
  trees' byte extents, and in each tree every array's length against
  ``num_leaves`` (and ``num_cat``), child indices and split features in range,
  and a linear tree's leaf models (``linear_tree=True``: ``leaf_const``,
  ``num_features``, ``leaf_features`` in range, ``leaf_coeff``);
* XGBoost JSON and UBJSON: nesting at most :data:`MAX_NESTING` levels deep,
  found without recursion.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from fitaudit._errors import InputError

#: the deepest nesting of an XGBoost model file (its own files nest about 8 levels)
MAX_NESTING = 64

#: per-tree arrays of one value per internal node (``num_leaves - 1``) and per leaf (``num_leaves``)
_INTERNAL = ("split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
             "internal_value", "internal_weight", "internal_count")
_LEAVES = ("leaf_value", "leaf_weight", "leaf_count")
#: arrays a tree must have (the rest are optional; LightGBM fills them in)
_REQUIRED = ("split_feature", "threshold", "decision_type", "left_child", "right_child", "leaf_value")


class _Bad(Exception):
    """What is wrong with the file (caught by the checks and worded with its name)."""


def _int(value: str, key: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _Bad(f"{key}={value[:40]!r} is not an integer") from None


def _numbers(line: str, key: str, *, integers: bool = False) -> np.ndarray:
    parts = line.split()
    try:
        return np.array([int(p) for p in parts] if integers else [float(p) for p in parts])
    except ValueError:
        raise _Bad(f"'{key}' holds a value that is not a number") from None


def _key_values(block: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def _check_linear(index: int, values: dict[str, str], leaves: int, n_features: int) -> None:
    """A linear tree's leaf models (``linear_tree=True``): ``leaf_const`` one per leaf, ``num_features`` one
    count per leaf, and ``leaf_features`` (in range) and ``leaf_coeff`` exactly as many as the counts add up to.

    LightGBM reads ``num_features`` and ``leaf_features`` without checking their lengths and indexes a row's
    features with ``leaf_features`` when it predicts: a file that disagrees reads or writes past its arrays.
    """
    if values["is_linear"] != "1":
        raise _Bad(f"tree {index} has is_linear={values['is_linear'][:20]!r} (expected 0 or 1)")
    if "leaf_const" in values and len(_numbers(values["leaf_const"], "leaf_const")) != leaves:
        raise _Bad(f"tree {index} has {len(values['leaf_const'].split())} values of 'leaf_const' for "
                   f"num_leaves={leaves}")
    if "num_features" not in values:
        return
    counts = _numbers(values["num_features"], "num_features", integers=True)
    if len(counts) != leaves or counts.min(initial=0) < 0:
        raise _Bad(f"tree {index}'s 'num_features' are not {leaves} counts (one per leaf)")
    total = int(counts.sum())
    features = _numbers(values.get("leaf_features", ""), "leaf_features", integers=True)
    coefficients = _numbers(values.get("leaf_coeff", ""), "leaf_coeff")
    if len(features) != total or len(coefficients) != total:
        raise _Bad(f"tree {index} has {len(features)} 'leaf_features' and {len(coefficients)} 'leaf_coeff' for "
                   f"the {total} its 'num_features' count")
    if total and (features.min() < 0 or features.max() >= n_features):
        raise _Bad(f"tree {index}'s 'leaf_features' name a feature beyond max_feature_idx")


def _check_tree(index: int, block: str, n_features: int) -> None:
    values = _key_values(block)
    if not block.startswith(f"Tree={index}\n"):
        raise _Bad(f"tree_sizes does not match the trees (tree {index} does not start where tree_sizes puts it)")
    if any(line.strip() and "=" not in line for line in block.splitlines()):
        raise _Bad(f"tree {index} holds a line that is not 'key=value'")  # LightGBM seeks the '=' past the line
    leaves = _int(values.get("num_leaves", "missing"), f"Tree={index} num_leaves")
    if leaves < 1:
        raise _Bad(f"tree {index} has num_leaves={leaves}")
    cats = _int(values.get("num_cat", "0"), f"Tree={index} num_cat")
    if values.get("is_linear", "0") not in ("0", ""):
        _check_linear(index, values, leaves, n_features)
    if leaves == 1:
        if len(values.get("leaf_value", "").split()) != 1:
            raise _Bad(f"tree {index} has one leaf but not one leaf_value")
        return
    expected = {key: leaves - 1 for key in _INTERNAL} | {key: leaves for key in _LEAVES}
    for key in _REQUIRED:
        if key not in values:
            raise _Bad(f"tree {index} has no '{key}'")
    for key, length in expected.items():
        if key in values and len(values[key].split()) != length:
            raise _Bad(f"tree {index} has {len(values[key].split())} values of '{key}' for num_leaves={leaves} "
                       f"(expected {length})")
    for key in ("left_child", "right_child"):
        children = _numbers(values[key], key, integers=True)
        if children.min() < -leaves or children.max() > leaves - 2:
            raise _Bad(f"tree {index} has a '{key}' outside the tree")
    features = _numbers(values["split_feature"], "split_feature", integers=True)
    if features.min() < 0 or features.max() >= n_features:
        raise _Bad(f"tree {index} splits on a feature beyond max_feature_idx")
    for key in ("threshold", "leaf_value"):
        _numbers(values[key], key)
    if cats < 0:
        raise _Bad(f"tree {index} has num_cat={cats}")
    if cats:
        bounds = _numbers(values.get("cat_boundaries", ""), "cat_boundaries", integers=True)
        thresholds = values.get("cat_threshold", "").split()
        if len(bounds) != cats + 1 or bounds[0] != 0 or np.any(np.diff(bounds) < 0) or bounds[-1] != len(thresholds):
            raise _Bad(f"tree {index}'s cat_boundaries do not match num_cat={cats} and cat_threshold")


def _check_lightgbm(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    start = text.find("\nTree=")
    end = text.find("\nend of trees")
    if start < 0 or end < 0:
        raise _Bad("it has no trees, or no 'end of trees' line (truncated?)")
    header = _key_values(text[:start])
    for key in ("num_class", "num_tree_per_iteration", "max_feature_idx", "tree_sizes"):
        if key not in header:
            raise _Bad(f"its header has no '{key}'")
    n_class = _int(header["num_class"], "num_class")
    per_iteration = _int(header["num_tree_per_iteration"], "num_tree_per_iteration")
    n_features = _int(header["max_feature_idx"], "max_feature_idx") + 1
    sizes = _numbers(header["tree_sizes"], "tree_sizes", integers=True)
    if n_features < 1 or len(header.get("feature_names", "").split()) != n_features:
        raise _Bad(f"max_feature_idx={n_features - 1} does not match its {len(header.get('feature_names', '').split())}"
                   " feature names")
    if len(sizes) == 0 or per_iteration < 1 or len(sizes) % per_iteration:
        raise _Bad(f"its {len(sizes)} tree_sizes are not a whole number of iterations of "
                   f"num_tree_per_iteration={per_iteration}")
    if n_class < 1 or n_class != per_iteration:
        raise _Bad(f"num_class={n_class} does not match num_tree_per_iteration={per_iteration}")
    offset = start + 1
    for index, size in enumerate(sizes.tolist()):
        if size < 1 or offset + size > end + 1:
            raise _Bad(f"tree_sizes does not match the trees (tree {index} runs past 'end of trees'; truncated?)")
        _check_tree(index, text[offset:offset + size], n_features)
        offset += size
    if text[offset:offset + 12] != "end of trees":
        raise _Bad(f"tree_sizes does not match the trees ({len(sizes)} sizes, but the trees do not end there)")
    _check_parameters(text[end:])


#: one line of a LightGBM file's parameters section: ``[name: value]``
_PARAMETER = re.compile(r"\[[A-Za-z0-9_]+: [^\n]*\]")


def _check_parameters(tail: str) -> None:
    """The ``parameters:`` section after the trees, when present: whole ``[name: value]`` lines and its end line."""
    start = tail.find("\nparameters:\n")
    if start < 0:
        return
    stop = tail.find("\nend of parameters", start)
    if stop < 0:
        raise _Bad("its parameters section has no 'end of parameters' line (truncated?)")
    for line in tail[start + len("\nparameters:\n"):stop].splitlines():
        if line.strip() and not _PARAMETER.fullmatch(line.strip()):
            raise _Bad(f"its parameters section holds a line that is not '[name: value]': {line[:60]!r}")


def check_lightgbm_file(path: Path, *, name: str = "path") -> None:
    """Refuse a LightGBM model text file whose structure LightGBM would crash on (see the module's notes)."""
    try:
        _check_lightgbm(path.read_bytes())
    except _Bad as bad:
        raise InputError(f"`{name}`: {str(path)!r} is not a well-formed LightGBM model file: {bad}.") from None


def _json_depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text, strings skipped (no recursion)."""
    stripped = re.sub(rb'"(?:[^"\\]|\\.)*"', b'""', data, flags=re.DOTALL)
    codes = np.frombuffer(stripped, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


#: UBJSON markers of fixed-size values and their sizes in bytes
_UBJ_FIXED = {b"Z": 0, b"N": 0, b"T": 0, b"F": 0, b"i": 1, b"U": 1, b"C": 1, b"I": 2, b"l": 4, b"L": 8,
              b"d": 4, b"D": 8}
_UBJ_INTS = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q"}


def _ubj_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in UBJSON, without recursion.

    Typed containers (``[$d#L<count>``, XGBoost's arrays of numbers) are
    skipped whole; counted ones (``[#L<count>``) end after their count of values.
    """
    position, deepest = 0, 0
    #: the open containers: (is an object, values left or -1 until its closing marker)
    stack: list[list[int]] = []

    def read_int() -> int:
        nonlocal position
        marker = data[position:position + 1]
        size = _UBJ_FIXED.get(marker, 0)
        if marker not in _UBJ_INTS or position + 1 + size > len(data):
            raise _Bad(f"a length at byte {position} is not an integer, or is cut off")
        value = int(np.frombuffer(data, dtype=_UBJ_INTS[marker], count=1, offset=position + 1)[0])
        position += 1 + size
        if value < 0:
            raise _Bad(f"a negative length before byte {position}")
        return value

    def close_counted() -> None:
        """One value done: counted containers that are now full are closed (each a value of its parent)."""
        while stack and stack[-1][1] > 0:
            stack[-1][1] -= 1
            if stack[-1][1] > 0:
                return
            stack.pop()

    while position < len(data):
        if stack and stack[-1][0] and data[position:position + 1] != b"}":
            key_length = read_int()  # an object key: its length, then its bytes
            position += key_length
        marker = data[position:position + 1]
        position += 1
        if marker in (b"[", b"{"):
            count = -1
            if data[position:position + 1] == b"$":  # typed: $type #count, then the bare values
                element = data[position + 1:position + 2]
                position += 2
                if data[position:position + 1] != b"#" or element not in _UBJ_FIXED:
                    raise _Bad(f"a typed container before byte {position} is not counted or not of numbers")
                position += 1
                values = read_int()
                position += values * _UBJ_FIXED[element]
                close_counted()
                continue
            if data[position:position + 1] == b"#":
                position += 1
                count = read_int()
            stack.append([int(marker == b"{"), count])
            deepest = max(deepest, len(stack))
            if deepest > MAX_NESTING:
                return deepest
            if count == 0:
                stack.pop()
                close_counted()
        elif marker in (b"]", b"}"):
            if not stack or stack[-1][1] != -1:
                raise _Bad(f"a closing {marker.decode()} at byte {position - 1} closes nothing")
            stack.pop()
            close_counted()
        elif marker in _UBJ_FIXED:
            position += _UBJ_FIXED[marker]
            close_counted()
        elif marker in (b"S", b"H"):
            length = read_int()
            position += length
            close_counted()
        else:
            raise _Bad(f"unknown UBJSON marker {marker!r} at byte {position - 1}")
    if stack:
        raise _Bad("it ends inside an array or object (truncated?)")
    return deepest


def check_xgboost_file(path: Path, *, name: str = "path") -> None:
    """Refuse an XGBoost ``.json``/``.ubj`` file nested deeper than :data:`MAX_NESTING` levels, or not UBJSON."""
    data = path.read_bytes()
    try:
        depth = _ubj_depth(data) if path.suffix.lower() == ".ubj" else _json_depth(data)
    except _Bad as bad:
        raise InputError(f"`{name}`: {str(path)!r} is not a well-formed XGBoost model file: {bad}.") from None
    if depth > MAX_NESTING:
        raise InputError(f"`{name}`: {str(path)!r} nests more than {MAX_NESTING} levels deep; XGBoost's own model "
                         "files nest about 8, and a deeper one would crash its parser.")
