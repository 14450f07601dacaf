"""Every test states its claim itself: an assert of its own, or the exception it expects.

A test whose only asserts sit in a helper reads as if it checked nothing, and a helper that
stops asserting leaves it passing. The check reads each test module's syntax tree: a test
function (``test_*``, in a module or a ``Test*`` class) must hold an ``assert`` statement in
its own body (in a loop, ``if`` or ``with`` of it, not in a function it defines), or expect
an exception or a warning with ``pytest.raises``, ``pytest.warns`` or
``pytest.deprecated_call``. A snapshot (``assert result == snapshot``) is an assert.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

TESTS = Path(__file__).resolve().parent
EXPECTING = frozenset({"raises", "warns", "deprecated_call"})
"""The ``pytest`` calls that state a test's claim as the exception or warning it expects."""

type FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def collected_tests(tree: ast.Module) -> Iterator[FunctionNode]:
    """Yield the test functions pytest collects from a module: its own and its classes'."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (n for n in node.body if is_test(n))
        elif is_test(node):
            yield node


def is_test(node: ast.stmt) -> TypeGuard[FunctionNode]:
    """Return whether ``node`` is a function pytest collects as a test."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
        "test_"
    )


def own_nodes(function: FunctionNode) -> Iterator[ast.AST]:
    """Yield every node of ``function``'s body, but none of a function or class it defines."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def expects(node: ast.AST) -> bool:
    """Return whether ``node`` is a call of ``pytest.raises``, ``pytest.warns`` and the like."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in EXPECTING
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "pytest"
    )


def states_its_claim(function: FunctionNode) -> bool:
    """Return whether ``function`` asserts, or expects an exception or warning, itself."""
    return any(isinstance(node, ast.Assert) or expects(node) for node in own_nodes(function))


def without_a_claim(source: str) -> list[str]:
    """Return the name of each test in ``source`` that states no claim of its own."""
    tree = ast.parse(source)
    return [f.name for f in collected_tests(tree) if not states_its_claim(f)]


def test_every_test_states_its_claim_with_an_assert_of_its_own() -> None:
    """No test in tests/ leaves its claim to a helper (the helper may return what it read)."""
    found = {
        f"{path.relative_to(TESTS.parent)}::{name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for name in without_a_claim(path.read_text(encoding="utf-8"))
    }
    assert found == set()


SAMPLE = """
import pytest


def check(value):
    assert value == 2


def test_asserts_itself():
    assert 1 + 1 == 2


def test_leaves_it_to_a_helper():
    check(1 + 1)


def test_asserts_only_in_a_function_it_defines():
    def inner():
        assert True
    inner()


async def test_asserts_in_a_loop_under_a_with(tmp_path):
    with open(tmp_path / "x", "w"):
        for n in range(3):
            if n:
                assert n > 0


def test_expects_an_exception():
    with pytest.raises(ValueError):
        int("x")


async def test_expects_a_warning_in_an_async_with(session):
    async with session:
        with pytest.warns(UserWarning):
            session.warn()


def test_expects_an_exception_by_a_call():
    pytest.raises(ValueError, int, "x")


def test_calls_a_raises_of_its_own():
    raises(ValueError)


def test_matches_a_snapshot(snapshot):
    assert {"a": 1} == snapshot


def helper_named_like_nothing():
    pass


class TestGroup:
    def test_asserts_in_a_class(self):
        assert True

    def test_leaves_it_in_a_class(self):
        check(2)


class Helpers:
    def test_is_not_collected_here(self):
        pass
"""


def test_the_check_tells_a_test_that_asserts_from_one_that_leaves_it_to_a_helper() -> None:
    """On a sample: a helper's or a nested function's assert is not the test's; raises is."""
    assert without_a_claim(SAMPLE) == [
        "test_leaves_it_to_a_helper",
        "test_asserts_only_in_a_function_it_defines",
        "test_calls_a_raises_of_its_own",
        "test_leaves_it_in_a_class",
    ]


def imported_test_modules(tree: ast.Module) -> list[str]:
    """Return the test modules (``test_*``) an import names: shared code belongs elsewhere."""
    named: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or "", *(f"{node.module or ''}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        named.extend(m for m in modules if m.rpartition(".")[2].startswith("test_"))
    return named


def test_no_module_imports_a_test_module() -> None:
    """Shared set-up sits in conftest.py or a common module, never in another test module."""
    found = {
        path.relative_to(TESTS).as_posix(): imported
        for path in sorted(TESTS.rglob("*.py"))
        if (imported := imported_test_modules(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_check_finds_a_test_module_however_it_is_imported() -> None:
    """``from tests.x.test_y import z``, ``from tests.x import test_y`` and ``import`` are found."""
    tree = ast.parse(
        "from tests.engine.test_engine import ask\n"
        "from tests.ha import test_paths\n"
        "import tests.engine.test_images\n"
        "from tests.ha.common import converse\n"
    )
    assert imported_test_modules(tree) == [
        "tests.engine.test_engine",
        "tests.ha.test_paths",
        "tests.engine.test_images",
    ]
