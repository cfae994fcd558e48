"""The documentation says what the code does: the systems it lists are the registered ones,
every tutorial is listed where tutorials are listed, and every test a page cites exists."""

import ast
import glob
import os
import re

import pytest

from mava_systems import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
TUTORIAL_PAGES = sorted(os.path.basename(path)
                        for path in glob.glob(os.path.join(DOCS, "tutorials", "*.md")))
BUILTIN = {name for name in registry.system_names()
           if registry.system_class(name).__module__.startswith("mava_systems.")}


def read(*path):
    with open(os.path.join(ROOT, *path)) as text:
        return text.read()


def listed_systems(text):
    """The system names in the first "A system (...)" list of `text`, lower-cased."""
    match = re.search(r"A system\s*\(([^)]*)\)", text)
    assert match, "no 'A system (...)' list"
    return {name.lower() for name in re.findall(r"\b[A-Z][A-Z0-9]{2,}\b", match.group(1))}


@pytest.mark.parametrize("page", [("README.md",), ("docs", "index.md")])
def test_the_listed_systems_are_the_registered_ones(page):
    assert listed_systems(read(*page)) == BUILTIN


def test_every_tutorial_is_listed_in_the_readme_the_index_and_the_navigation():
    assert {"maa2c.md", "vdn_s.md", "your_own_mixer.md"} <= set(TUTORIAL_PAGES)
    readme, index, navigation = read("README.md"), read("docs", "index.md"), read("mkdocs.yml")
    documentation = readme[readme.index("## Documentation"):]
    documentation = documentation[:documentation.index("\n## ")]
    for page in TUTORIAL_PAGES:
        assert f"(docs/tutorials/{page})" in documentation, page
        assert f"(tutorials/{page})" in index, page
        assert f"tutorials/{page}" in navigation, page
    count = re.search(r"(\w+) tutorials, API reference", readme).group(1)
    numbers = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    assert numbers.index(count) + 1 == len(TUTORIAL_PAGES), count


def test_no_page_calls_a_built_system_planned():
    for path in [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(DOCS, "**", "*.md"),
                                                              recursive=True):
        with open(path) as page:
            text = page.read()
        assert "value decomposition is planned" not in text, path
        assert "MADQN today" not in text, path


def cited_tests(text):
    """(file, test) pairs a page cites as `tests/f.py::test_a`, `::test_b` (same file)."""
    cited, current = [], None
    for match in re.finditer(r"`(tests/[\w/]+\.py)?::(test_\w+)`", text):
        current = match.group(1) or current
        cited.append((current, match.group(2)))
    return cited


def test_every_test_the_bad_inputs_page_cites_exists():
    cited = cited_tests(read("docs", "bad_inputs.md"))
    assert len(cited) > 30
    defined = {}
    for path, name in cited:
        if path not in defined:
            tree = ast.parse(read(path))
            defined[path] = {node.name for node in ast.walk(tree)
                             if isinstance(node, ast.FunctionDef)}
        assert name in defined[path], f"{path}::{name}"
