"""The package's layering, checked on the source: data flows one way.

* nothing below the instruments (models/, data/, stats/ and the shared
  modules) imports an instrument, the CLI or the report layer;
* matplotlib appears only in report/ (``grep -rn matplotlib src/fitaudit``);
* argparse only in cli/; importing the library loads neither the CLI nor
  matplotlib.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import fitaudit

PACKAGE = Path(fitaudit.__file__).parent

#: subpackages and modules that results, instruments and the CLI build on
FOUNDATIONS = ("models", "data", "stats", "checkpoint.py", "folder_lock.py", "parallel.py", "options.py", "results.py", "random.py",
               "_validation.py", "_errors.py", "_names.py", "_optional.py", "_lazy.py", "_version.py",
               "verdict.py")

#: what a foundation must never import
UPPER = ("overfit", "pmv", "examine", "pgdl", "measures", "leakage", "auditing", "experiments", "cli", "report", "_audit",
         "demo", "slices", "labels", "baseline", "calibration")


def test_every_top_level_part_of_the_package_is_a_foundation_or_above_them():
    """A new subpackage or module must be placed in the layering (else nothing checks what it imports)."""
    parts = {p.name for p in PACKAGE.iterdir() if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    placed = {*FOUNDATIONS, *(f"{u}.py" if (PACKAGE / f"{u}.py").exists() else u for u in UPPER),
              "__init__.py", "__main__.py"}
    assert parts <= placed, f"not placed in the layering: {sorted(parts - placed)}"


def _module_graph() -> dict[str, set[str]]:
    """fitaudit's modules and the fitaudit modules each imports (at the top or inside functions).

    ``from package import submodule`` counts as an import of the submodule only (Python runs the
    package's ``__init__`` first, but that is not a dependency of the importer on the package).
    """
    modules: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = _imported_modules(path)
        edges = set()
        for name in names:
            if name in modules and not any(n.startswith(name + ".") and n in modules for n in names):
                edges.add(name)
            elif name not in modules and name.rsplit(".", 1)[0] in modules:
                edges.add(name.rsplit(".", 1)[0])
        graph[module] = edges - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#: import cycles not yet broken (issue 29 item 7): none is left. No cycle may appear.
KNOWN_CYCLES: tuple[set[str], ...] = ()


@pytest.mark.slow
def test_no_import_cycle_beyond_the_known_ones():
    cycles = _cycles(_module_graph())
    new = [sorted(c) for c in cycles if not any(c <= known for known in KNOWN_CYCLES)]
    assert not new, f"import cycles: {new}"


def test_the_audit_imports_no_demo():
    """Known answers live with the demo: no module of the audit imports it (the report asks the result's hook)."""
    demo = sorted(f"{path.relative_to(PACKAGE)} -> {name}" for path in _sources("auditing")
                  for name in _imported_modules(path) if name == "fitaudit.demo" or name.startswith("fitaudit.demo."))
    assert not demo, demo


@pytest.mark.slow
def test_no_module_of_the_audit_imports_its_package():
    """The package ``__init__`` is the audit's entry point; its modules import one another, never it (no cycle)."""
    graph = _module_graph()
    inside = sorted(m for m, edges in graph.items() if m.startswith("fitaudit.auditing.") and "fitaudit.auditing" in edges)
    assert not inside, inside
    assert not any(c & {"fitaudit.auditing", *(m for m in graph if m.startswith("fitaudit.auditing."))}
                   for c in _cycles(graph))
    planted = {**graph, "fitaudit.auditing.runner": graph["fitaudit.auditing.runner"] | {"fitaudit.auditing"}}
    assert any({"fitaudit.auditing", "fitaudit.auditing.runner"} <= c for c in _cycles(planted))


@pytest.mark.slow
def test_the_cycle_finder_sees_a_planted_cycle():
    graph = _module_graph()
    graph["fitaudit.models.base"] = graph["fitaudit.models.base"] | {"fitaudit.models.dispatch"}
    assert any({"fitaudit.models.base", "fitaudit.models.dispatch"} <= c for c in _cycles(graph))


def _sources(*roots: str) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        path = PACKAGE / root
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (also inside functions)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module", "import_optional"
        ):
            names.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return names


def test_the_import_scanner_sees_imports():
    sample = PACKAGE / "models" / "base.py"
    assert "fitaudit._errors" in _imported_modules(sample)
    assert "fitaudit._validation.check_int" in _imported_modules(sample)


@pytest.mark.parametrize("path", _sources(*FOUNDATIONS), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_foundations_import_no_instrument(path):
    upward = sorted(
        name for name in _imported_modules(path)
        if any(name == f"fitaudit.{u}" or name.startswith(f"fitaudit.{u}.") for u in UPPER)
    )
    assert not upward, f"{path.relative_to(PACKAGE)} imports {upward}"


def test_matplotlib_only_in_report():
    outside = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "report" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "matplotlib" in line
    ]
    assert not outside, f"matplotlib outside report/: {outside}"


@pytest.mark.slow
def test_argparse_only_in_the_cli():
    """scipy.special loads argparse (through unittest), so the check is on fitaudit's own imports."""
    users = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "cli" not in path.relative_to(PACKAGE).parts and "argparse" in _imported_modules(path)
    ]
    assert not users, f"argparse imported outside cli/: {users}"


@pytest.mark.parametrize("package", ["fitaudit.overfit", "fitaudit.pmv", "fitaudit.models", "fitaudit.data"])
@pytest.mark.slow
def test_importing_the_library_loads_neither_the_cli_nor_matplotlib(package):
    code = (  # every public name is looked up, so the lazily imported submodules load too
        f"import sys, {package} as p; [getattr(p, n) for n in p.__all__]; "
        "print(sorted(m for m in sys.modules if m == 'matplotlib' or m.startswith('fitaudit.cli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_command_line_starts_without_the_heavy_libraries():
    """Building every command's parser (``fitaudit --help``) imports no scipy.stats, scikit-learn, torch or joblib."""
    code = (
        "import sys, fitaudit.cli as c; c.build_parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules if m in ('scipy.stats', 'sklearn', 'torch', 'joblib')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("package", ["fitaudit.data", "fitaudit.overfit", "fitaudit.pmv"])
def test_lazy_packages_serve_every_public_name(package):
    """Each name of ``__all__`` resolves to the object its submodule defines, and is listed by ``dir()``."""
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert name in dir(module)
        home = getattr(value, "__module__", None)
        if home is not None and home.startswith(package):
            assert getattr(importlib.import_module(home), name) is value
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.__getattr__("not_a_name")


#: the instruments: none imports another (the audit and the measures that wrap one combine them)
INSTRUMENTS = ("overfit", "examine", "pgdl", "pmv")

#: the only places that may import the report layer (besides report/ itself): the layers above it
#: (``_audit`` is :func:`fitaudit.audit`, which joins the audit's decisions and the report's words)
REPORT_USERS = ("cli", "demo", "_audit")


def _home(path: Path) -> str:
    """The top-level subpackage or module of fitaudit that ``path`` belongs to (``"demo"`` for demo/answers.py)."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _fitaudit_imports(path: Path) -> list[list[str]]:
    return [name.split(".") for name in _imported_modules(path) if name.startswith("fitaudit.")]


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_no_instrument_imports_another(instrument):
    crossing = sorted(
        f"{path.relative_to(PACKAGE)} -> {'.'.join(name)}"
        for path in _sources(instrument)
        for name in _fitaudit_imports(path)
        if len(name) > 1 and name[1] in INSTRUMENTS and name[1] != instrument
    )
    assert not crossing, f"{instrument} imports another instrument: {crossing}"


@pytest.mark.slow
def test_nothing_imports_another_package_s_private_modules():
    """A package that wraps another (a measure around PMV) goes through its public API, not ``_engine``."""
    private = sorted(
        f"{path.relative_to(PACKAGE)} -> {'.'.join(name)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in _fitaudit_imports(path)
        if len(name) > 2 and name[1] != _home(path)
        and any(part.startswith("_") and not part.startswith("__") for part in name[2:])
    )
    assert not private, f"imports of another package's private modules: {private}"


def test_only_the_cli_the_audit_and_the_demo_import_the_report_layer():
    users = sorted(
        f"{path.relative_to(PACKAGE)} -> {'.'.join(name)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if _home(path) not in ("report", *REPORT_USERS)
        for name in _fitaudit_imports(path)
        if len(name) > 1 and name[1] == "report"
    )
    assert not users, f"the report layer imported from below: {users}"


def test_the_report_layer_does_not_import_the_cli_or_the_demo():
    """The report words and draws the audit (it may read auditing's data); what sits above it, it never imports."""
    upward = sorted(
        f"{path.relative_to(PACKAGE)} -> {'.'.join(name)}"
        for path in _sources("report")
        for name in _fitaudit_imports(path)
        if len(name) > 1 and name[1] in ("cli", "demo", "_audit")
    )
    assert not upward, f"report/ imports the layers above it: {upward}"


def _report_imports_of(folder: str, sources: dict[str, list[list[str]]] | None = None) -> list[str]:
    """Imports of the report layer by the modules of ``folder`` (``sources``: module -> imports, to plant one)."""
    imports = sources if sources is not None else {
        str(path.relative_to(PACKAGE)): _fitaudit_imports(path) for path in _sources(folder)}
    return sorted(f"{module} -> {'.'.join(name)}" for module, names in imports.items()
                  for name in names if len(name) > 1 and name[1] == "report")


def test_the_audit_does_not_import_the_report_layer():
    """The audit holds data and decisions; report/ (above it) turns them into sentences and pages."""
    assert not _report_imports_of("auditing"), _report_imports_of("auditing")
    planted = {"auditing/result.py": [["fitaudit", "report", "verdicts"]]}  # the check sees a planted violation
    assert _report_imports_of("auditing", planted) == ["auditing/result.py -> fitaudit.report.verdicts"]


def test_no_result_type_is_defined_in_the_cli():
    """Result types are library data (fitaudit.results.Result subclasses live beside their instrument)."""
    defined = sorted(
        f"{path.relative_to(PACKAGE)}: {node.name}"
        for path in _sources("cli")
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("Result") for base in node.bases)
    )
    assert not defined, f"Result types under cli/: {defined}"


def test_the_layering_checks_see_what_they_check():
    """The scanners catch a planted violation of each rule (they are not vacuous)."""
    sample = PACKAGE / "pmv" / "score.py"
    assert _home(sample) == "pmv" and _home(PACKAGE / "demo" / "answers.py") == "demo"
    planted = ast.parse("class Planted(OverfitTestResult):\n    pass\n")
    assert any(ast.unparse(b).endswith("Result") for n in ast.walk(planted) if isinstance(n, ast.ClassDef)
               for b in n.bases)
    names = [n.split(".") for n in _imported_modules(PACKAGE / "report" / "pmv.py") if n.startswith("fitaudit.")]
    assert ["fitaudit", "report", "verdicts"] in names


#: the instruments' decision modules (each instrument owns its verdict)
DECISIONS = ("overfit/decision.py", "leakage/decision.py", "examine/decision.py", "pmv/decision.py",
             "pgdl/decision.py", "stats/decision.py", "auditing/decision.py", "slices/decision.py",
             "labels/decision.py")


@pytest.mark.parametrize("path", DECISIONS)
def test_a_decision_imports_no_words_and_no_other_layer(path):
    """A decision module builds a Verdict from its result: it needs no report, CLI, audit or other instrument."""
    own = "fitaudit." + path.split("/")[0]
    allowed = ("fitaudit.verdict", "fitaudit._errors", "fitaudit.results", "fitaudit.stats", own)
    imported = {name for name in _imported_modules(PACKAGE / path) if name.startswith("fitaudit")}
    assert all(name.startswith(allowed) for name in imported), sorted(imported)


def test_no_decision_is_taken_from_the_report_layer():
    """auditing/ and report/ take thresholds and decisions from the instruments, words only from report.verdicts."""
    words_only = {"fitaudit.report.verdicts." + name for name in (
        "read", "read_part", "part_context", "say", "Reading", "verdict_json", "word_audit", "word_parts",
        "said_lines", "split_headline")}
    for path in _sources("auditing", "report", "cli", "demo"):
        taken = {name for name in _imported_modules(path) if name.startswith("fitaudit.report.verdicts.")}
        assert taken <= words_only, (path.name, sorted(taken - words_only))
