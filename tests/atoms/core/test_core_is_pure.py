"""The core stays free of Django so that it is unit-testable in milliseconds."""

from __future__ import annotations

import ast
from pathlib import Path

import atoms.core

FORBIDDEN_ROOTS = {"django", "rest_framework", "celery", "memoryhub", "tenants", "atoms_django"}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_core_module_imports_django_or_the_service_packages() -> None:
    core = Path(atoms.core.__file__).parent
    modules = sorted(core.rglob("*.py"))
    assert len(modules) >= 7
    offenders = {str(path.relative_to(core)): sorted(_imported_roots(path) & FORBIDDEN_ROOTS) for path in modules}
    assert {name: roots for name, roots in offenders.items() if roots} == {}
