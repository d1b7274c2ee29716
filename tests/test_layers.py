"""The dependency picture of docs/architecture.md, kept true by reading every module's imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("computerops", "sites", "tasks", "adapter", "verifier", "replays")

ALLOWED: dict[str, tuple[str, ...]] = {
    # layer (a package or module prefix): what of ours it may import besides itself.
    "computerops.core": (),
    "sites": ("computerops.core",),
    # tasks.catalog checks a task's tables and columns against its site's models (sites.registry, imported late);
    # a task's grants are the broker's (sites.kit.broker: pydantic models, its page import made only when it blocks);
    # an attack's payload is planted by sites.kit.plant (SQLAlchemy Core only); a template draws its records from
    # the site's seeded rows (sites.kit.seeding, imported late).
    "tasks": ("computerops.core", "sites.kit.faults", "sites.kit.fault_params", "sites.kit.broker", "sites.kit.plant",
              "sites.kit.seeding", "sites.registry"),
    "verifier": ("computerops.core", "tasks", "sites.kit.records", "sites.kit.broker"),
    # the scripted endpoint's noise-aware control dismisses page noise by the labels sites.kit.noise declares (one
    # declaration: pydantic models and lxml, no site, no database)
    "adapter": ("computerops.core", "tasks", "sites.kit.noise"),
    "replays": ("computerops.core", "verifier", "sites", "tasks"),
    "computerops": OURS,
}
"""The most specific prefix decides: `computerops.core` is the bottom layer, the rest of `computerops` the top."""


def layer_of(module: str) -> str:
    return max((layer for layer in ALLOWED if module == layer or module.startswith(layer + ".")), key=len)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] in OURS]


MODULES = sorted(p for package in OURS for p in (ROOT / package).rglob("*.py"))


def violations(module: str, source: str) -> list[str]:
    layer = layer_of(module)
    allowed = (layer, *ALLOWED[layer])
    return [f"{module}:{line} imports {name} (layer {layer} may import {', '.join(allowed)})"
            for line, name in imports_of(source)
            if not any(name == a or name.startswith(a + ".") for a in allowed)]


def test_every_package_imports_only_the_layers_below_it() -> None:
    assert len(MODULES) > 100
    found = [v for path in MODULES for v in violations(module_name(path), path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("module", "source", "expected"), [
    ("computerops.core.probe", "from adapter.loop import ModelLoop\n", 1),
    ("computerops.core.probe", "def f():\n    import computerops.cli.main\n", 1),  # nested imports count too
    ("computerops.core.probe", "from computerops.core.hashing import canonical_sha256\n", 0),
    ("sites.kit.probe", "from tasks import LoadedTask\n", 1),
    ("sites.kit.probe", "from computerops.core import defaults\n", 0),
    ("tasks.probe", "from sites.kit.faults import FaultClass\n", 0),
    ("tasks.probe", "from sites.kit.tenancy import Tenant\n", 1),
    ("verifier.probe", "from replays import Receipt\n", 1),
    ("adapter.probe", "from sites.kit.oplog import TENANT_HEADER\n", 1),
    ("adapter.probe", "from pydantic import BaseModel\n", 0),
    ("computerops.cli.main", "from adapter.loop import ModelLoop\n", 0),
])
def test_the_check_sees_an_import_that_breaks_the_layers(module: str, source: str, expected: int) -> None:
    assert len(violations(module, source)) == expected


@pytest.mark.parametrize("module", ["adapter.transcript", "computerops.runs.records", "computerops.core.formats"])
def test_reading_evidence_loads_neither_the_openai_client_nor_playwright(module: str) -> None:
    # Reports, verify and the audit read transcripts and records; only running episodes needs those clients.
    probe = f"import sys, {module}; print(sorted(m for m in ('openai', 'playwright') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
