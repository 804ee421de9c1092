"""Fail when a pip dry-run report (`pip install --dry-run --report FILE ...`) would install a CUDA package.

Usage: python .ci/no_cuda.py REPORT.json. A CUDA package is one named
``nvidia-*`` or ``*-cu<N>`` (nvidia-nccl-cu12, xgboost-cu12, ...). Exit 1 with
their names and versions on stderr, else 0 with the count checked.
"""

from __future__ import annotations

import json
import re
import sys

CUDA = re.compile(r"^(nvidia-.*|.*-cu\d+)$")


def main(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        installs = json.load(handle)["install"]
    packages = [(item["metadata"]["name"], item["metadata"]["version"]) for item in installs]
    cuda = [f"{name} {version}" for name, version in packages if CUDA.match(name.lower())]
    if cuda:
        print(f"{len(cuda)} CUDA package(s) would be installed: {', '.join(cuda)}", file=sys.stderr)
        return 1
    print(f"no CUDA package among {len(packages)} to install")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
