"""docs/architecture.md names every module of the packages it describes, so its module table stays complete."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGES = ("computerops", "adapter", "verifier", "replays", "tasks", "sites/kit")


def test_the_module_table_names_every_module() -> None:
    modules = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if p.name != "__init__.py")
    assert len(modules) > 80
    missing = [str(p.relative_to(ROOT)) for p in modules if f"`{p.name}`" not in ARCHITECTURE
               and f"`{p.relative_to(p.parent.parent).as_posix()}`" not in ARCHITECTURE]
    assert not missing, f"docs/architecture.md does not name: {missing}"
