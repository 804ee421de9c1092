"""No extra of pyproject.toml asks for a CUDA build on a machine without a GPU.

The requirements are read from pyproject.toml and their environment markers
evaluated for Linux (x86-64 and aarch64), Windows and macOS. What a
requirement pulls in turn (the `xgboost` wheel for Linux x86-64 requires
nvidia-nccl-cu12) is checked by CI: `.ci/run` resolves
`pip install -e '.[all]'` with `--dry-run --report` after the CPU torch and
fails on any `nvidia-*` package (`.ci/no_cuda.py`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]

#: marker environments of the platforms pip installs fitaudit on
PLATFORMS = {
    "linux-x86_64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
    "linux-aarch64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
}

#: distributions that are CUDA builds, or whose wheel for some platform requires CUDA packages
CUDA = re.compile(r"^(nvidia-.*|.*-cu\d+|cupy.*|xgboost)$")


def requirements(extra: str, platform: str) -> list[Requirement]:
    """The requirements of ``extra`` that apply on ``platform``, the self-references (``fitaudit[...]``) expanded."""
    environment = {**PLATFORMS[platform], "extra": extra}
    found: list[Requirement] = []
    for line in EXTRAS[extra]:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        if requirement.name == PROJECT["name"]:
            for inner in sorted(requirement.extras):
                found += requirements(inner, platform)
        else:
            found.append(requirement)
    return found


@pytest.mark.parametrize("platform", sorted(set(PLATFORMS) - {"macos"}))
def test_no_extra_asks_for_a_cuda_package(platform: str):
    wanted = {extra: sorted(r.name for r in requirements(extra, platform) if CUDA.match(r.name.lower()))
              for extra in EXTRAS}
    assert {extra: names for extra, names in wanted.items() if names} == {}


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_platform_gets_an_xgboost_module(platform: str):
    names = {r.name for r in requirements("xgboost", platform)}
    assert names == ({"xgboost"} if platform == "macos" else {"xgboost-cpu"})
    assert names <= {r.name for r in requirements("all", platform)}


def test_the_cuda_pattern_catches_what_it_should():
    assert all(CUDA.match(name) for name in ("nvidia-nccl-cu12", "nvidia-cublas-cu12", "xgboost", "cupy-cuda12x",
                                              "xgboost-cu12"))
    assert not any(CUDA.match(name) for name in ("xgboost-cpu", "faiss-cpu", "torch", "onnxruntime"))


def _dry_run_report(tmp_path: Path, names: list[str]) -> Path:
    report = {"version": "1", "install": [{"metadata": {"name": name, "version": "1.0"}} for name in names]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


def test_ci_check_fails_on_an_nvidia_package_in_a_dry_run_report(tmp_path):
    script = ROOT / ".ci" / "no_cuda.py"
    bad = subprocess.run([sys.executable, str(script), str(_dry_run_report(tmp_path, ["numpy", "nvidia-nccl-cu12"]))],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "nvidia-nccl-cu12 1.0" in bad.stderr
    good = subprocess.run([sys.executable, str(script), str(_dry_run_report(tmp_path, ["numpy", "xgboost-cpu"]))],
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and "no CUDA package among 2" in good.stdout, good.stderr


def _third_party_imports(path: Path) -> set[str]:
    """The top-level modules a script imports (anywhere in it) that are neither the standard library, fitaudit nor
    the benchmarks' own modules beside it."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    local = {p.stem for p in path.parent.glob("*.py")} | {p.stem for p in path.parent.parent.glob("*.py")}
    return {name for name in found if name not in sys.stdlib_module_names and name not in local} - {"fitaudit"}


def test_the_benchmarks_extra_covers_the_photo_world_scripts():
    """Every module the photo-world benchmarks import comes with the core, [all] or [benchmarks] (issue 51)."""
    from importlib.metadata import packages_distributions

    validity = ROOT / "benchmarks" / "validity"
    scripts = [p for p in validity.glob("*.py") if "photo_world" in p.read_text() or p.stem == "photo_world"]
    assert {"photo_world", "photo_space", "photo_examine", "overfit_stride"} <= {p.stem for p in scripts}
    wanted = {Requirement(line).name.lower() for line in PROJECT["dependencies"]}
    wanted |= {r.name.lower() for extra in ("all", "benchmarks") for r in requirements(extra, "linux-x86_64")}
    distributions = packages_distributions()
    missing = {}
    for script in scripts:
        for module in _third_party_imports(script):
            names = {d.lower() for d in distributions.get(module, [module])}
            if not names & wanted:
                missing[f"{script.name}: {module}"] = sorted(names)
    assert missing == {}
    assert "scikit-image" in {r.name for r in requirements("benchmarks", "linux-x86_64")}
