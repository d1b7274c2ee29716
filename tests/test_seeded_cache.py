"""Seeded template databases: seeded once per process (sites/kit/seeding.py `SeededTemplates`), and kept on disk
for other processes (sites/kit/seeded_cache.py), used only when the copy hashes to its record."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sites.kit import seeded_cache, seeding, tenancy
from sites.kit.seeding import SeededTemplates
from sites.registry import SITES, tenant_registry

SITE, SEED = "helpdesk", 3


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own, and a process store of its own (nothing seeded yet)."""
    root = tmp_path / "seeded"
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, str(root))
    monkeypatch.setattr(seeding, "SEEDED", SeededTemplates())
    return root


@pytest.fixture
def seedings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every seeding this process does from now on, (site, seed)."""
    made: list[tuple[str, int]] = []
    real = seeding.seed_database

    def counted(engine: object, site: object, seed: int) -> None:
        made.append((getattr(site, "name", "?"), seed))
        real(engine, site, seed)  # type: ignore[arg-type]

    monkeypatch.setattr(seeding, "seed_database", counted)
    return made


def rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT * FROM ticket ORDER BY id").fetchall()


def fresh_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """As another process would start: nothing seeded in memory."""
    monkeypatch.setattr(seeding, "SEEDED", SeededTemplates())


def registries(tmp_path: Path, count: int) -> Iterator[tenancy.TenantRegistry]:
    for n in range(count):
        registry = tenant_registry(tmp_path / f"registry-{n}")
        try:
            yield registry
        finally:
            registry.close()


def test_two_registries_of_one_process_seed_once_and_each_has_its_own_copy(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path) -> None:
    first, second = (tenant_registry(tmp_path / name) for name in ("run", "replay"))
    try:
        one, two = first.create(SITE, SEED), second.create(SITE, SEED)
        assert seedings == [(SITE, SEED)]
        assert first.template(SITE, SEED) != second.template(SITE, SEED)
        assert first.template(SITE, SEED).parent == first.root / "templates"
        assert one.snapshot() == two.snapshot() == first.template_state(SITE, SEED)
        one.engine.dispose()
        with sqlite3.connect(one.db_path) as connection:  # a tenant's write reaches neither the other nor a template
            connection.execute("DELETE FROM ticket")
        assert two.snapshot()["ticket"] and rows(second.template(SITE, SEED))
    finally:
        first.close()
        second.close()


def test_another_process_reads_the_kept_seeding_instead_of_seeding(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tenant_registry(tmp_path / "a")
    state = first.template_state(SITE, SEED)
    first.close()
    fresh_store(monkeypatch)
    second = tenant_registry(tmp_path / "b")
    try:
        assert second.template_state(SITE, SEED) == state
        assert seedings == [(SITE, SEED)]
    finally:
        second.close()


@pytest.mark.parametrize("change", ["database", "record sha256", "record key", "record format", "no record"])
def test_a_kept_seeding_changed_on_disk_is_not_used_but_seeded_again_and_rewritten(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        change: str) -> None:
    registry = tenant_registry(tmp_path / "a")
    registry.template(SITE, SEED)
    state = registry.template_state(SITE, SEED)
    registry.close()
    [database] = kept.rglob("*.sqlite")
    record = database.with_suffix(".json")
    if change == "database":  # one row changed: the same size, another hash
        with sqlite3.connect(database) as connection:
            connection.execute("UPDATE ticket SET subject = 'changed on disk' WHERE id = (SELECT min(id) FROM ticket)")
    elif change == "no record":
        record.unlink()
    else:
        data = json.loads(record.read_text())
        field, value = {"record sha256": ("sha256", "0" * 64), "record key": ("key", "0" * 64),
                        "record format": ("format_version", 2)}[change]
        data[field] = value
        record.write_text(json.dumps(data))
    fresh_store(monkeypatch)
    again = tenant_registry(tmp_path / "b")
    try:
        assert again.template_state(SITE, SEED) == state
        assert seedings == [(SITE, SEED), (SITE, SEED)]
        assert seeded_cache.KeptSeeding.model_validate_json(record.read_text()).sha256 == \
            hashlib.sha256(database.read_bytes()).hexdigest()  # rewritten whole
    finally:
        again.close()


def test_switched_off_nothing_is_kept_or_read(kept: Path, seedings: list[tuple[str, int]], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, "off")
    for registry in registries(tmp_path, 2):
        registry.template(SITE, SEED)
        fresh_store(monkeypatch)
    assert seedings == [(SITE, SEED)] * 2 and not kept.exists()


def test_a_sites_definition_other_than_the_shipped_one_is_seeded_for_itself_and_never_kept(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path) -> None:
    shipped = SITES[SITE]
    own = dataclasses.replace(shipped, title="A test's own helpdesk")
    theirs = tenancy.TenantRegistry(tmp_path / "own", sites={SITE: own})
    ours = tenant_registry(tmp_path / "shipped")
    try:
        theirs.template(SITE, SEED)
        assert not kept.exists(), "a test's definition is code the key does not cover"
        ours.template(SITE, SEED)
        assert seedings == [(SITE, SEED)] * 2, "the shipped definition is another key than the test's"
        assert list(kept.rglob("*.sqlite"))
    finally:
        theirs.close()
        ours.close()


def test_the_code_digest_is_the_key_a_change_of_code_seeds_anew(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = tenant_registry(tmp_path / "a")
    registry.template(SITE, SEED)
    registry.close()
    monkeypatch.setattr(seeded_cache, "code_digest", lambda: "f" * 64)
    fresh_store(monkeypatch)
    again = tenant_registry(tmp_path / "b")
    try:
        again.template(SITE, SEED)
    finally:
        again.close()
    assert seedings == [(SITE, SEED)] * 2
    assert len([p for p in kept.iterdir() if p.is_dir()]) == 2


def test_the_process_keeps_only_its_most_recent_seedings_and_removes_the_others_files(
        kept: Path, seedings: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SeededTemplates, "KEEP", 2)
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, "off")
    store = seeding.SEEDED
    paths = [store.database(SITES[SITE], seed) for seed in (1, 2, 3)]
    assert [p.exists() for p in paths] == [False, True, True]
    store.database(SITES[SITE], 1)
    assert seedings == [(SITE, 1), (SITE, 2), (SITE, 3), (SITE, 1)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_seeds_in_a_directory_of_its_own(kept: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, "off")
    parent = seeding.SEEDED.database(SITES[SITE], SEED)
    answer = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # the child: its own seeding, not the parent's file
        try:
            answer.write_text(str(seeding.SEEDED.database(SITES[SITE], SEED)))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    child = Path(answer.read_text())
    assert child != parent and child.parent != parent.parent
