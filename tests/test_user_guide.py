"""The user guide (docs/) stays in step with the code it describes."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from fitaudit.measures import list_measures, registered

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: the internal method specification users do not have (spelled in two parts so this file does not cite it)
INTERNAL_SPEC = "METHODS" + ".md"

#: text files of the repository that users read: the package, its docs, README, tests and benchmarks
TEXT_SUFFIXES = {".py", ".md", ".txt", ".json", ".toml", ".yml", ".yaml", ".cfg", ".html", ".csv"}


def _text_files(*roots: Path) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files.extend(p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in TEXT_SUFFIXES)
    return files


def _slug(heading: str) -> str:
    """The anchor mkdocs (python-markdown's toc extension) gives a heading."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            anchors.add(_slug(match.group(1)))
    return anchors


def test_measures_page_lists_every_registered_measure_with_its_family():
    text = (DOCS / "measures.md").read_text()
    listed = dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([a-z_]+) \|", text, flags=re.MULTILINE))
    assert sorted(listed) == list_measures()
    for name, family in listed.items():
        assert registered()[name].family == family, name


def test_every_page_in_the_navigation_exists():
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    pages = re.findall(r":\s*([\w/-]+\.md)\s*$", nav, flags=re.MULTILINE)
    assert pages, "no pages found in mkdocs.yml"
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing


@pytest.mark.parametrize("page", ["overfit.md", "pmv.md", "examiner.md", "pgdl.md", "slices.md", "labels.md"])
def test_each_instrument_page_says_what_it_answers_assumes_and_how_to_read_it(page):
    text = (DOCS / page).read_text()
    for heading in ("## What it answers", "## How to read"):
        assert heading in text, (page, heading)


def test_no_file_cites_the_internal_method_specification():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _text_files(ROOT / "src", DOCS, ROOT / "README.md", ROOT / "tests", ROOT / "benchmarks")
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if INTERNAL_SPEC in line
    ]
    assert not offenders, f"cite the paper or a docs page instead: {offenders}"


def test_slug_matches_the_anchors_mkdocs_writes():
    assert _slug("Test A: the confidence-interval test") == "test-a-the-confidence-interval-test"
    assert _slug("The starting kit and the competition's baselines") == "the-starting-kit-and-the-competitions-baselines"
    assert _slug("Generalization measures (PGDL)") == "generalization-measures-pgdl"


def _code_references() -> list[tuple[str, str, str]]:
    """(where, page, anchor) for every ``docs/<page>.md#<anchor>`` in code, README, tests and benchmarks."""
    pattern = re.compile(r"docs/([\w/-]+\.md)(?:#([\w-]+))?")
    found = []
    for path in _text_files(ROOT / "src", ROOT / "README.md", ROOT / "tests", ROOT / "benchmarks"):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [(f"{path.relative_to(ROOT)}:{number}", page, anchor or "") for page, anchor in pattern.findall(line)]
    return found


def _docs_links() -> list[tuple[str, str, str]]:
    """(where, page, anchor) for every relative link between the docs pages."""
    pattern = re.compile(r"\]\(((?:[\w/-]+\.md)?)(?:#([\w-]+))?\)")
    found = []
    for path in _text_files(DOCS):
        if path.suffix != ".md":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for page, anchor in pattern.findall(line):
                target = (path.parent / page).resolve().relative_to(DOCS) if page else path.relative_to(DOCS)
                found.append((f"{path.relative_to(ROOT)}:{number}", str(target), anchor))
    return found


def test_every_docs_page_and_section_cited_by_the_code_exists():
    references = _code_references()
    assert len(references) >= 40, "the code should point users at the user guide"
    missing = [f"{where}: docs/{page}" for where, page, _ in references if not (DOCS / page).is_file()]
    assert not missing
    broken = [f"{where}: docs/{page}#{anchor}" for where, page, anchor in references
              if anchor and anchor not in _anchors(DOCS / page)]
    assert not broken


def test_every_link_between_docs_pages_lands_on_a_section():
    links = _docs_links()
    assert links
    missing = [f"{where}: {page}" for where, page, _ in links if not (DOCS / page).is_file()]
    assert not missing
    broken = [f"{where}: {page}#{anchor}" for where, page, anchor in links
              if anchor and anchor not in _anchors(DOCS / page)]
    assert not broken


@pytest.mark.parametrize("page", ["overfit.md", "pmv.md", "examiner.md", "pgdl.md", "measures.md", "first-questions.md",
                                  "baseline.md", "calibration.md", "slices.md", "labels.md"])
def test_each_method_page_ends_with_numbered_references(page):
    text = (DOCS / page).read_text()
    assert "## References" in text, page
    references = text.split("## References", 1)[1]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", references, flags=re.MULTILINE)]
    assert numbers and numbers == list(range(1, len(numbers) + 1)), (page, numbers)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text.split("## References", 1)[0])}
    assert cited <= set(numbers), (page, sorted(cited - set(numbers)))


def _python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a page (README or docs/), each as one string."""
    blocks, current = [], None
    for line in page.read_text().splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def _fitaudit_imports(block: str) -> list[tuple[str, str | None]]:
    """``(module, name)`` of every fitaudit import in a code block (``name`` None for ``import fitaudit.x``)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(block))
    except SyntaxError:  # a block with ``...`` placeholders inside expressions: read its import lines alone
        lines = [line for line in block.splitlines() if re.match(r"\s*(from|import)\s+fitaudit", line)]
        tree = ast.parse("\n".join(line.strip() for line in lines))
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "fitaudit":
            found.extend((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names if alias.name.split(".")[0] == "fitaudit")
    return found


def test_every_fitaudit_import_in_the_guide_resolves():
    """A code example that imports a name fitaudit does not have (the worked torch CNN example imported
    ``export_onnx`` from ``fitaudit.models.io``, where it is not) fails here."""
    import importlib

    missing = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for block in _python_blocks(page):
            for module, name in _fitaudit_imports(block):
                imported = importlib.import_module(module)
                if name is not None and name != "*" and not hasattr(imported, name):
                    try:
                        importlib.import_module(f"{module}.{name}")
                    except ImportError:
                        missing.append(f"{page.relative_to(ROOT)}: from {module} import {name}")
    assert not missing, missing
