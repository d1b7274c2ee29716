"""Blind cases against the seeded templates (`sites/kit/seeding.py` `SeededTemplates`, `SEEDED`), their disk cache
(`sites/kit/seeded_cache.py`) and the code digest that keys it (`computerops/core/code_keyed.py`), written from those
modules' contracts alone.

Every case points the cache at a folder of its own (`COMPUTEROPS_SEEDED_CACHE`, and the module's default root moved
aside too), so none reads or writes the repository's `.cache/`. The shipped site used is webmail (the quickest to
seed); a definition of the test's own (`TINY`) stands for a site that is not the product's.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import multiprocessing
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest
from fastapi import APIRouter
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, insert
from sqlmodel import Session

from computerops.core import code_keyed
from sites.kit import seeded_cache, seeding
from sites.kit.seeding import SeededTemplates, seed_database
from sites.kit.site import SiteDefinition
from sites.kit.tenancy import TenantRegistry
from sites.registry import SITES

REPOSITORY = code_keyed.REPOSITORY
WEBMAIL = SITES["webmail"]
SITE = WEBMAIL.name

# A site of the test's own, cheap to seed, under the name of a shipped one: never the product's.
_TINY_METADATA = MetaData()
_TINY_NOTE = Table("blind_note", _TINY_METADATA, Column("id", Integer, primary_key=True),
                   Column("text", String, nullable=False))


def _seed_tiny(session: Session, rng: random.Random) -> None:
    session.connection().execute(insert(_TINY_NOTE), [{"id": i, "text": f"note {rng.random()!r}"} for i in (1, 2, 3)])


def _no_router() -> APIRouter:
    return APIRouter()


TINY = SiteDefinition(name=SITE, title="Blind tiny", router=_no_router, metadata=_TINY_METADATA, seed=_seed_tiny,
                      start_path=f"/{SITE}/")


# ---------------------------------------------------------------------------------------------------------------
# Helpers


def dump(path: Path) -> list[str]:
    """Every table's schema and rows of a database file (opened read-only)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def dump_sha256(path: Path) -> str:
    return hashlib.sha256("\n".join(dump(path)).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _engine(path: Path) -> Engine:
    from sqlalchemy import create_engine

    return create_engine(f"sqlite:///{path}")


def seed_file(definition: SiteDefinition, seed: int, path: Path) -> Path:
    """A seeding made without any store or cache (the cache-off reference)."""
    engine = _engine(path)
    try:
        seed_database(engine, definition, seed)
    finally:
        engine.dispose()
    return path


@dataclasses.dataclass(frozen=True)
class References:
    folder: Path

    def file(self, seed: int) -> Path:
        """The reference seeding of webmail for `seed` (made once)."""
        path = self.folder / f"reference-{SITE}-{seed}.sqlite"
        if not path.exists():
            seed_file(WEBMAIL, seed, self.folder / f".partial-{seed}.sqlite").rename(path)
        return path

    def dump(self, seed: int) -> list[str]:
        return dump(self.file(seed))


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> References:
    return References(tmp_path_factory.mktemp("blind-seeded-references"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache's folder for this test (and the default root moved aside, so the repository's is never touched)."""
    root = tmp_path / "cache"
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, str(root))
    monkeypatch.setattr(seeded_cache, "DEFAULT_ROOT", tmp_path / "default-root")
    return root


@pytest.fixture
def seedings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every fresh seeding a store makes from now on (site name, seed)."""
    made: list[tuple[str, int]] = []
    original = seeding.seed_database

    def counted(engine: Engine, site: SiteDefinition, seed: int) -> None:
        made.append((site.name, seed))
        original(engine, site, seed)

    monkeypatch.setattr(seeding, "seed_database", counted)
    return made


def kept(root: Path, site: str, seed: int) -> tuple[Path, Path]:
    """The kept database and record of (site, seed) under `root` (exactly one of each)."""
    [database] = list(root.glob(f"*/{site}-{seed}.sqlite"))
    [record] = list(root.glob(f"*/{site}-{seed}.json"))
    return database, record


def tree(root: Path) -> dict[str, bytes | None]:
    """Everything under `root`: files by their bytes, folders and other things as None."""
    if not root.exists():
        return {}
    return {path.relative_to(root).as_posix(): (path.read_bytes() if path.is_file() and not path.is_symlink() else None)
            for path in sorted(root.rglob("*"))}


def reads_back(site: str, seed: int, into: Path) -> list[str] | None:
    """What the cache hands out for (site, seed) now, as a dump; None when it hands out nothing."""
    if not seeded_cache.read_into(site, seed, into):
        assert not into.exists(), "a refused read left its target behind"
        return None
    return dump(into)


# ---------------------------------------------------------------------------------------------------------------
# What is kept, and that it is used


def test_a_kept_seeding_is_read_by_another_store_and_equals_the_cache_off_seeding(
        cache: Path, references: References, seedings: list[tuple[str, int]]) -> None:
    first = SeededTemplates()
    assert dump(first.database(WEBMAIL, 1)) == references.dump(1)
    assert seedings == [(SITE, 1)]
    second = SeededTemplates()  # another process's store, as far as the cache can tell
    path = second.database(WEBMAIL, 1)
    assert seedings == [(SITE, 1)], "the second store seeded again instead of reading the kept seeding"
    assert dump(path) == references.dump(1)
    assert second.state(WEBMAIL, 1) == first.state(WEBMAIL, 1)
    assert second.state_json(WEBMAIL, 1) == first.state_json(WEBMAIL, 1)


def test_the_record_names_the_key_and_the_kept_files_sha256_and_no_temporary_file_stays(
        cache: Path, references: References) -> None:
    SeededTemplates().database(WEBMAIL, 1)
    database, record_path = kept(cache, SITE, 1)
    record = seeded_cache.KeptSeeding.model_validate_json(record_path.read_bytes())
    assert record.key == seeded_cache.key(SITE, 1) and record.site == SITE and record.seed == 1
    assert record.sha256 == file_sha256(database)
    assert dump(database) == references.dump(1)
    assert sorted(path.name for path in database.parent.iterdir()) == sorted([database.name, record_path.name])
    assert seeded_cache.key(SITE, 1) != seeded_cache.key(SITE, 2)
    assert seeded_cache.key(SITE, 1) != seeded_cache.key("helpdesk", 1)


def test_the_environment_names_where_seedings_go(tmp_path: Path, cache: Path) -> None:
    SeededTemplates().database(WEBMAIL, 2)
    kept(cache, SITE, 2)
    assert not (tmp_path / "default-root").exists()


# ---------------------------------------------------------------------------------------------------------------
# A damaged entry is never used


_Corruption = tuple[str, int, bytes]


@st.composite
def corruptions(draw: st.DrawFn) -> _Corruption:
    kind = draw(st.sampled_from(["flip", "truncate", "append", "insert", "overwrite"]))
    where = draw(st.integers(min_value=0, max_value=1 << 30))
    data = draw(st.binary(min_size=1, max_size=16))
    return kind, where, data


def corrupt(original: bytes, corruption: _Corruption) -> bytes:
    kind, where, data = corruption
    index = where % len(original)
    if kind == "flip":
        return original[:index] + bytes([original[index] ^ (data[0] or 1)]) + original[index + 1:]
    if kind == "truncate":
        return original[:index]
    if kind == "append":
        return original + data
    if kind == "insert":
        return original[:index] + data + original[index:]
    changed = original[:index] + data + original[index + len(data):]
    return changed if changed != original else original[:index] + bytes([original[index] ^ 0xFF]) + original[index + 1:]


@pytest.fixture(scope="module")
def kept_once(tmp_path_factory: pytest.TempPathFactory, references: References) -> Path:
    """A cache folder holding webmail's seed-1 seeding."""
    root = tmp_path_factory.mktemp("blind-seeded-kept") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(seeded_cache.ENVIRONMENT, str(root))
        seeded_cache.keep(SITE, 1, references.file(1))
    return root


@given(corruption=corruptions())
def test_any_change_to_the_kept_files_bytes_is_refused(kept_once: Path, corruption: _Corruption) -> None:
    database, _ = kept(kept_once, SITE, 1)
    pristine = database.read_bytes()
    changed = corrupt(pristine, corruption)
    assert changed != pristine
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as scratch:
        patch.setenv(seeded_cache.ENVIRONMENT, str(kept_once))
        target = Path(scratch) / "copy.sqlite"
        try:
            database.write_bytes(changed)
            assert not seeded_cache.read_into(SITE, 1, target), f"a changed file was used ({corruption[0]})"
            assert not target.exists()
        finally:
            database.write_bytes(pristine)
        assert seeded_cache.read_into(SITE, 1, target)  # the pristine one is used again


Damage = Callable[["Entry"], object]


@dataclasses.dataclass(frozen=True)
class Entry:
    database: Path
    record: Path
    other_database: Path
    other_record: Path
    outside: Path


def _rewrite_record(entry: Entry, **changes: Any) -> None:
    record = json.loads(entry.record.read_text(encoding="utf-8"))
    record.update(changes)
    entry.record.write_text(json.dumps(record), encoding="utf-8")


def _replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_bytes(b"x")


def _symlink_outside(path: Path, outside: Path, content: bytes) -> None:
    outside.write_bytes(content)
    path.unlink()
    path.symlink_to(outside)


def _truncate_file(e: Entry) -> None:
    content = e.database.read_bytes()
    e.database.write_bytes(content[:len(content) // 2])


def _empty_file(e: Entry) -> None:
    e.database.write_bytes(b"")


def _change_header_byte(e: Entry) -> None:
    content = e.database.read_bytes()
    e.database.write_bytes(content[:24] + bytes([content[24] ^ 0x7F]) + content[25:])  # the change counter


def _swap_file(e: Entry) -> None:
    e.database.write_bytes(e.other_database.read_bytes())


def _swap_file_and_record(e: Entry) -> None:
    e.database.write_bytes(e.other_database.read_bytes())
    e.record.write_bytes(e.other_record.read_bytes())


def _record_of_another_key(e: Entry) -> None:
    e.database.write_bytes(e.other_database.read_bytes())
    _rewrite_record(e, key=seeded_cache.key(SITE, 2), sha256=file_sha256(e.other_database))


def _record_of_older_code(e: Entry) -> None:
    _rewrite_record(e, key=hashlib.sha256(f"older code\0{SITE}\0{1}".encode()).hexdigest())


def _record_of_another_sha(e: Entry) -> None:
    e.database.write_bytes(e.other_database.read_bytes())
    _rewrite_record(e, sha256="0" * 64)


def _record_without_sha(e: Entry) -> None:
    record = json.loads(e.record.read_text(encoding="utf-8"))
    del record["sha256"]
    e.record.write_text(json.dumps(record), encoding="utf-8")


def _record_cut_short(e: Entry) -> None:
    content = e.record.read_bytes()
    e.record.write_bytes(content[:len(content) // 2])


def _fifo_file(e: Entry) -> None:
    e.database.unlink()
    os.mkfifo(e.database)


DAMAGES: dict[str, tuple[Damage, bool]] = {
    # name: (what is done to webmail seed 1's entry, whether a fresh seeding can be kept over it afterwards)
    "file truncated to half": (_truncate_file, True),
    "file emptied": (_empty_file, True),
    "file's header byte changed": (_change_header_byte, True),
    "file swapped with another seed's": (_swap_file, True),
    "file and record swapped with another seed's": (_swap_file_and_record, True),
    "record pointing at another key (its file that key's, hashed right)": (_record_of_another_key, True),
    "record of another code's key": (_record_of_older_code, True),
    "record's sha256 of another file": (_record_of_another_sha, True),
    "record of another format version": (lambda e: _rewrite_record(e, format_version=2), True),
    "record with an unknown field": (lambda e: _rewrite_record(e, extra="x"), True),
    "record without its sha256": (_record_without_sha, True),
    "record of malformed JSON": (lambda e: e.record.write_bytes(b'{"key": '), True),
    "record cut short": (_record_cut_short, True),
    "record emptied": (lambda e: e.record.write_bytes(b""), True),
    "record a JSON list": (lambda e: e.record.write_bytes(b"[]"), True),
    "record not UTF-8": (lambda e: e.record.write_bytes(b"\xff\xfe\x00{"), True),
    "record a directory": (lambda e: _replace_with_directory(e.record), False),
    "record missing, file present": (lambda e: e.record.unlink(), True),
    "file missing, record present": (lambda e: e.database.unlink(), True),
    "file a directory": (lambda e: _replace_with_directory(e.database), False),
    "file a symlink outside the cache to another seed's database": (
        lambda e: _symlink_outside(e.database, e.outside, e.other_database.read_bytes()), True),
    "file a symlink outside the cache to garbage": (
        lambda e: _symlink_outside(e.database, e.outside, b"SQLite format 3\0" + b"\0" * 4096), True),
    "record a symlink outside the cache to another seed's record": (
        lambda e: _symlink_outside(e.record, e.outside, e.other_record.read_bytes()), True),
    "file a FIFO": (_fifo_file, True),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_entry_is_seeded_afresh_never_used(damage: str, cache: Path, tmp_path: Path, references: References,
                                                     seedings: list[tuple[str, int]]) -> None:
    seeded_cache.keep(SITE, 1, references.file(1))
    seeded_cache.keep(SITE, 2, references.file(2))
    database, record = kept(cache, SITE, 1)
    other_database, other_record = kept(cache, SITE, 2)
    entry = Entry(database, record, other_database, other_record, tmp_path / "outside" / "planted")
    entry.outside.parent.mkdir()
    do, rewritable = DAMAGES[damage]
    do(entry)
    outside_before = tree(entry.outside.parent)

    store = SeededTemplates()
    path = store.database(WEBMAIL, 1)
    assert dump(path) == references.dump(1), "a damaged entry was used"
    assert seedings == [(SITE, 1)], "the store did not seed afresh"
    assert tree(entry.outside.parent) == outside_before, "a write went through a link to outside the cache"
    assert reads_back(SITE, 2, tmp_path / "other.sqlite") == references.dump(2), "another seed's entry was harmed"
    if rewritable:  # the fresh seeding was kept in its place, whole
        assert reads_back(SITE, 1, tmp_path / "again.sqlite") == references.dump(1)
        assert not entry.database.is_symlink() and not entry.record.is_symlink()
    else:
        assert reads_back(SITE, 1, tmp_path / "again.sqlite") in (None, references.dump(1))
    assert not list(cache.rglob(".*.tmp")), "a temporary file was left in the cache"


def test_a_fifo_planted_as_the_record_does_not_hang_a_seeding(cache: Path, tmp_path: Path,
                                                             references: References) -> None:
    seeded_cache.keep(SITE, 1, references.file(1))
    _, record = kept(cache, SITE, 1)
    record.unlink()
    os.mkfifo(record)
    answers: list[bool] = []
    reader = threading.Thread(target=lambda: answers.append(seeded_cache.read_into(SITE, 1, tmp_path / "t.sqlite")),
                              daemon=True)
    reader.start()
    reader.join(2.0)
    hung = reader.is_alive()
    if hung:  # let it go: a writer that says nothing useful
        descriptor = os.open(record, os.O_WRONLY | os.O_NONBLOCK)
        os.write(descriptor, b"not a record")
        os.close(descriptor)
        reader.join(10.0)
    assert not hung, "read_into blocked on a FIFO planted as the record (waits forever for a writer)"
    assert answers == [False]



# ---------------------------------------------------------------------------------------------------------------
# Tenants, seeds and definitions never leak into each other


def test_writes_to_a_tenant_and_to_a_registrys_template_reach_no_other_registry_nor_process(
        cache: Path, tmp_path: Path, references: References) -> None:
    seeded_cache.keep(SITE, 1, references.file(1))
    first = TenantRegistry(tmp_path / "first", sites={SITE: WEBMAIL})
    second: TenantRegistry | None = None
    try:
        tenant = first.create(SITE, 1)
        template = first.template(SITE, 1)
        for path in (tenant.db_path, template):  # a tenant's writes, and a hostile write to the registry's copy
            connection = sqlite3.connect(path)
            for table in WEBMAIL.tables():
                connection.execute(f'DELETE FROM "{table.name}"')
            connection.execute("CREATE TABLE blind_planted (x)")
            connection.commit()
            connection.close()
        assert dump(tenant.db_path) != references.dump(1)
        second = TenantRegistry(tmp_path / "second", sites={SITE: WEBMAIL})
        other = second.create(SITE, 1)
        assert dump(other.db_path) == references.dump(1)
        assert dump(second.template(SITE, 1)) == references.dump(1)
        assert dump(seeding.SEEDED.database(WEBMAIL, 1)) == references.dump(1)
        assert reads_back(SITE, 1, tmp_path / "kept.sqlite") == references.dump(1)
        [child] = _seed_in_processes(cache, tmp_path, 1, count=1)
        assert child["dump_sha256"] == dump_sha256(references.file(1))
        # read from the cache, not seeded (unless someone changed the code since this process keyed it)
        assert child["seeded"] == 0 or child["digest"] != seeded_cache.code_digest()
    finally:
        first.close()
        if second is not None:
            second.close()


_CHILD = """
import hashlib, json, os, sqlite3, sys, time
from pathlib import Path
gate, seed = Path(sys.argv[1]), int(sys.argv[2])
from sites.registry import SITES
from sites.kit import seeding
calls = []
original = seeding.seed_database
def counted(engine, site, seed):
    calls.append(seed)
    original(engine, site, seed)
seeding.seed_database = counted
(gate.parent / f"ready-{os.getpid()}").touch()
while not gate.exists():
    time.sleep(0.005)
path = seeding.SEEDED.database(SITES["webmail"], seed)
connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
text = "\\n".join(connection.iterdump())
connection.close()
from sites.kit import seeded_cache
print(json.dumps({"dump_sha256": hashlib.sha256(text.encode()).hexdigest(), "seeded": len(calls),
                  "digest": seeded_cache.code_digest()}))
"""


def _seed_in_processes(root: Path, tmp_path: Path, seed: int, count: int) -> list[dict[str, Any]]:
    """`count` fresh processes seed (site, seed) at once (released together once all have imported)."""
    gates = Path(tempfile.mkdtemp(dir=tmp_path))
    gate = gates / "go"
    environment = {**os.environ, seeded_cache.ENVIRONMENT: str(root)}
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, str(gate), str(seed)], cwd=REPOSITORY,
                                 env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(count)]
    try:
        deadline = time.monotonic() + 60
        while len(list(gates.glob("ready-*"))) < count and time.monotonic() < deadline:
            if any(child.poll() is not None for child in children):
                break
            time.sleep(0.01)
        gate.touch()
        results = []
        for child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_two_processes_seeding_at_once_both_get_the_seeding_and_leave_a_whole_entry(
        cache: Path, tmp_path: Path, references: References, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _seed_in_processes(cache, tmp_path, 1, count=2)
    assert [result["dump_sha256"] for result in results] == [dump_sha256(references.file(1))] * 2
    assert sum(result["seeded"] for result in results) >= 1
    [digest] = {result["digest"] for result in results}
    monkeypatch.setattr(seeded_cache, "code_digest", lambda: digest)  # read the entry as the children keyed it
    database, record_path = kept(cache, SITE, 1)
    assert seeded_cache.KeptSeeding.model_validate_json(record_path.read_bytes()).sha256 == file_sha256(database)
    assert reads_back(SITE, 1, tmp_path / "after.sqlite") == references.dump(1)
    assert sorted(path.name for path in database.parent.iterdir()) == sorted([database.name, record_path.name])


def test_a_reader_racing_writers_gets_a_whole_kept_file_or_nothing(
        cache: Path, tmp_path: Path, references: References) -> None:
    """Writers keep two different whole files under one key in turn; whatever a reader is handed is one of them."""
    whole = {file_sha256(references.file(1)), file_sha256(references.file(2))}
    done = threading.Event()
    failures: list[BaseException] = []

    def write(source: Path) -> None:
        try:
            for _ in range(25):
                seeded_cache.keep(SITE, 1, source)
        except BaseException as error:
            failures.append(error)

    writers = [threading.Thread(target=write, args=(references.file(seed),)) for seed in (1, 2)]
    handed: list[str] = []

    def read() -> None:
        number = 0
        try:
            while not done.is_set():
                number += 1
                target = tmp_path / f"read-{number}.sqlite"
                if seeded_cache.read_into(SITE, 1, target):
                    handed.append(file_sha256(target))
                    target.unlink()
                else:
                    assert not target.exists()
        except BaseException as error:
            failures.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
    done.set()
    reader.join(60)
    assert not failures, failures
    assert set(handed) <= whole, "a reader was handed a file that is neither whole file"
    assert not list(cache.rglob(".*.tmp"))


def test_each_seed_gets_its_own_seeding_from_the_store_and_from_the_cache(
        cache: Path, references: References, seedings: list[tuple[str, int]]) -> None:
    assert references.dump(1) != references.dump(2)
    first = SeededTemplates()
    assert dump(first.database(WEBMAIL, 2)) == references.dump(2)
    assert dump(first.database(WEBMAIL, 1)) == references.dump(1)
    assert first.state(WEBMAIL, 1) != first.state(WEBMAIL, 2)
    second = SeededTemplates()
    assert dump(second.database(WEBMAIL, 1)) == references.dump(1)
    assert dump(second.database(WEBMAIL, 2)) == references.dump(2)
    assert dump(second.database(WEBMAIL, 3)) == dump(seed_file(WEBMAIL, 3, cache.parent / "three.sqlite"))
    assert sorted(seedings) == [(SITE, 1), (SITE, 2), (SITE, 3)]


def test_a_definition_not_shipped_is_never_read_from_nor_written_to_the_cache(
        cache: Path, references: References, seedings: list[tuple[str, int]]) -> None:
    assert seeded_cache.shipped(WEBMAIL)
    assert not seeded_cache.shipped(TINY)
    twin = dataclasses.replace(WEBMAIL)  # equal field by field, another object: not the shipped one
    assert twin == WEBMAIL and not seeded_cache.shipped(twin)

    store = SeededTemplates()
    store.database(TINY, 5)
    assert not cache.exists(), "a definition that is not shipped was written to the cache"
    seeded_cache.keep(SITE, 1, references.file(1))
    before = tree(cache)
    state = store.state(TINY, 1)
    assert set(state) == {"blind_note"} and len(state["blind_note"]) == 3, "the shipped site's kept seeding was used"
    assert dump(store.database(twin, 1)) == references.dump(1)
    assert seedings == [(SITE, 5), (SITE, 1), (SITE, 1)], "a definition not shipped was read from the cache"
    assert tree(cache) == before


def test_cache_off_reads_nothing_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    references: References, seedings: list[tuple[str, int]]) -> None:
    default = tmp_path / "default-root"
    monkeypatch.setattr(seeded_cache, "DEFAULT_ROOT", default)
    monkeypatch.delenv(seeded_cache.ENVIRONMENT, raising=False)
    seeded_cache.keep(SITE, 1, references.file(2))  # a forged entry: seed 2's database kept as seed 1's
    assert reads_back(SITE, 1, tmp_path / "forged.sqlite") == references.dump(2)  # the cache, on, would use it
    before = tree(default)
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, "off")
    assert seeded_cache.cache_root() is None
    store = SeededTemplates()
    assert dump(store.database(WEBMAIL, 1)) == references.dump(1), "the cache was read while off"
    assert dump(store.database(WEBMAIL, 4)) == dump(seed_file(WEBMAIL, 4, tmp_path / "four.sqlite"))
    assert seedings == [(SITE, 1), (SITE, 4)]
    assert not seeded_cache.read_into(SITE, 1, tmp_path / "off.sqlite") and not (tmp_path / "off.sqlite").exists()
    seeded_cache.keep(SITE, 5, references.file(1))
    assert tree(default) == before, "the cache was written while off"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["default-root", "forged.sqlite", "four.sqlite"]), "something was written beside"


# ---------------------------------------------------------------------------------------------------------------
# The code digest


def _build(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


_NAMES = st.sampled_from(["a/x.py", "a/y.py", "a/sub/z.html", "b/w.txt", "b/deep/er/v.py"])


@given(files=st.dictionaries(_NAMES, st.binary(max_size=8), min_size=1),
       changed=st.data())
def test_the_code_digest_follows_every_file_under_its_folders_and_nothing_else(
        files: dict[str, bytes], changed: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        def digest(tree_files: dict[str, bytes], name: str) -> str:
            root = _build(Path(scratch) / name, tree_files)
            (root / "a").mkdir(exist_ok=True)
            (root / "b").mkdir(exist_ok=True)
            return code_keyed.code_digest("salt", ("a", "b"), (), root=root)

        base = digest(files, "base")
        assert digest(files, "elsewhere") == base  # where the tree lies is not in the key
        name = changed.draw(st.sampled_from(sorted(files)))
        new_content = changed.draw(st.binary(max_size=8).filter(lambda content: content != files[name]))
        assert digest({**files, name: new_content}, "content") != base
        added = changed.draw(_NAMES.filter(lambda other: other not in files))if len(files) < 5 else None
        if added is not None:
            assert digest({**files, added: b""}, "added") != base
            renamed = {other: content for other, content in files.items() if other != name} | {added: files[name]}
            assert digest(renamed, "renamed") != base
        assert digest({**files, "a/__pycache__/x.cpython-311.pyc": b"1", "b/q.pyc": b"2", "c/outside.py": b"3"},
                      "ignored") == base
        assert code_keyed.code_digest("other salt", ("a", "b"), (), root=Path(scratch) / "base") != base


def test_the_code_digest_follows_library_python_and_sqlite_versions(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    root = _build(tmp_path, {"a/x.py": b"x"})
    base = code_keyed.code_digest("s", ("a",), ("sqlalchemy",), root=root)
    real_version = importlib.metadata.version
    with monkeypatch.context() as patch:
        patch.setattr(importlib.metadata, "version",
                      lambda name: "0.0.1" if name == "sqlalchemy" else real_version(name))
        assert code_keyed.code_digest("s", ("a",), ("sqlalchemy",), root=root) != base
    with monkeypatch.context() as patch:
        patch.setattr(sys, "version", sys.version + " (another build)")
        assert code_keyed.code_digest("s", ("a",), ("sqlalchemy",), root=root) != base
    assert code_keyed.code_digest("s", ("a",), ("sqlalchemy", "no-such-distribution-blind"), root=root) != base

    fresh = seeded_cache.code_digest.__wrapped__  # computed anew, the process's cached digest left alone
    real = fresh()
    with monkeypatch.context() as patch:
        patch.setattr(sqlite3, "sqlite_version", "0.0.0")
        assert fresh() != real
    with monkeypatch.context() as patch:
        patch.setattr(importlib.metadata, "version", lambda name: "0.0.1" if name == "sqlmodel" else real_version(name))
        assert fresh() != real


def _load_code_keyed_from(copy: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("blind_code_keyed_copy", copy / "computerops/core/code_keyed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_seeded_caches_digest_follows_the_site_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "repository"
    for folder in seeded_cache.CODE_FOLDERS:
        shutil.copytree(REPOSITORY / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    copied = _load_code_keyed_from(copy)
    assert Path(copied.REPOSITORY) == copy.resolve()
    fresh = seeded_cache.code_digest.__wrapped__  # computed anew, the process's cached digest left alone
    real = fresh()  # the tree as copied just now
    seed_module = copy / "sites" / "webmail" / "__init__.py"
    monkeypatch.setattr(seeded_cache, "code_keyed", copied)
    assert fresh() == real, "the same code elsewhere is another digest"
    original = seed_module.read_bytes()
    seed_module.write_bytes(original + b"\n# a change to the site's code\n")
    changed = fresh()
    assert changed != real
    keys = []
    for digest in (real, changed):
        monkeypatch.setattr(seeded_cache, "code_digest", lambda digest=digest: digest)
        keys.append(seeded_cache.key(SITE, 1))
    assert keys[0] != keys[1]
    seed_module.write_bytes(original)
    assert fresh() == real
    (copy / "sites" / "kit" / "blind_new_module.py").write_text("X = 1\n", encoding="utf-8")
    assert fresh() != real
    (copy / "sites" / "kit" / "blind_new_module.py").unlink()
    (copy / "computerops" / "core" / "hashing.py").write_bytes(
        (copy / "computerops" / "core" / "hashing.py").read_bytes() + b"\n")
    assert fresh() != real


def test_a_seeding_kept_by_other_code_is_not_used_and_old_codes_folders_are_pruned(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references: References,
        seedings: list[tuple[str, int]]) -> None:
    digests = [f"{number:x}" * 64 for number in range(1, 6)]
    monkeypatch.setattr(seeded_cache, "code_digest", lambda: digests[0])
    SeededTemplates().database(WEBMAIL, 1)
    assert seedings == [(SITE, 1)]
    cache.mkdir(exist_ok=True)
    (cache / "not-a-digest").mkdir()
    (cache / "README").write_text("kept", encoding="utf-8")
    monkeypatch.setattr(seeded_cache, "code_digest", lambda: digests[1])
    assert dump(SeededTemplates().database(WEBMAIL, 1)) == references.dump(1)
    assert seedings == [(SITE, 1)] * 2, "a seeding kept by other code was used"
    then = time.time() - 1000
    for age, digest in enumerate(digests):
        folder = cache / digest[:16]
        if not folder.exists():
            monkeypatch.setattr(seeded_cache, "code_digest", lambda digest=digest: digest)
            seeded_cache.keep(SITE, 1, references.file(1))
        os.utime(folder, (then + age, then + age))
    kept_versions = sorted(path.name for path in cache.iterdir() if path.is_dir() and len(path.name) == 16)
    assert kept_versions == sorted(digest[:16] for digest in digests[-seeded_cache.KEPT_CODE_VERSIONS:])
    assert (cache / "not-a-digest").is_dir() and (cache / "README").read_text(encoding="utf-8") == "kept"
    assert reads_back(SITE, 1, tmp_path / "current.sqlite") == references.dump(1)


def test_pruning_never_follows_a_folder_linked_from_outside_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("mine", encoding="utf-8")
    root.mkdir()
    then = time.time() - 1000
    names = [f"{number:x}" * 16 for number in range(1, 6)]
    for age, name in enumerate(names):
        (root / name).mkdir()
        os.utime(root / name, (then + age, then + age))
    link = root / ("f" * 16)
    link.symlink_to(outside, target_is_directory=True)
    os.utime(outside, (then - 100, then - 100))
    removed = code_keyed.prune_code_versions(root, names[-1], 2)
    assert (outside / "precious").read_text(encoding="utf-8") == "mine"
    assert sorted(path.name for path in root.iterdir() if not path.is_symlink()) == sorted(names[-2:])
    assert all(path.name in [*names[:-2], "f" * 16] for path in removed)


def test_a_cache_that_cannot_be_written_keeps_nothing_and_seeds_all_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references: References) -> None:
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_bytes(b"not a folder")
    monkeypatch.setenv(seeded_cache.ENVIRONMENT, str(blocked))
    store = SeededTemplates()
    assert dump(store.database(WEBMAIL, 1)) == references.dump(1)
    seeded_cache.keep(SITE, 2, references.file(2))
    assert not seeded_cache.read_into(SITE, 1, tmp_path / "none.sqlite")
    assert blocked.read_bytes() == b"not a folder"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file-not-a-folder"]


def _repository_packages() -> set[str]:
    return {path.name for path in REPOSITORY.iterdir() if (path / "__init__.py").is_file()}


def test_seeding_runs_only_code_the_key_covers(tmp_path: Path, references: References) -> None:
    """Every repository module the code folders import lies under them; seeding webmail executes repository code
    only there, and third-party code only of the key's libraries (typing_extensions and setuptools' import shim
    aside: see the report)."""
    packages = _repository_packages()
    outside: list[str] = []
    for folder in seeded_cache.CODE_FOLDERS:
        for path in (REPOSITORY / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_bytes())):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                         else [])
                for name in names:
                    if name.split(".")[0] in packages and not any(
                            name == folder_module or name.startswith(folder_module + ".")
                            for folder_module in (f.replace("/", ".") for f in seeded_cache.CODE_FOLDERS)):
                        outside.append(f"{path.relative_to(REPOSITORY)}: {name}")
    assert not outside

    executed: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            executed.add(frame.f_code.co_filename)

    engine = _engine(tmp_path / "traced.sqlite")
    sys.setprofile(profile)
    try:
        seed_database(engine, WEBMAIL, 1)
    finally:
        sys.setprofile(None)
        engine.dispose()
    assert dump(tmp_path / "traced.sqlite") == references.dump(1)
    distributions = importlib.metadata.packages_distributions()
    site_packages = [path for path in map(Path, sys.path) if path.name == "site-packages"]
    repository_files: set[str] = set()
    libraries: set[str] = set()
    for name in executed:
        path = Path(name)
        if not path.is_absolute():
            continue
        inside = next((base for base in site_packages if path.is_relative_to(base)), None)
        if inside is not None:
            top = path.relative_to(inside).parts[0].removesuffix(".py")
            libraries.update(distributions.get(top, [top]))
        elif path.is_relative_to(REPOSITORY):
            repository_files.add(path.relative_to(REPOSITORY).as_posix())
    assert repository_files and all(any(file.startswith(folder + "/") for folder in seeded_cache.CODE_FOLDERS)
                                     for file in repository_files), repository_files
    # typing_extensions and setuptools' import shim are called, but are no seeding's code; hypothesis is this test
    # runner's own (its random-state hooks run once a property test has run in the process)
    normal = {name.lower().replace("_", "-") for name in libraries} - {"typing-extensions", "setuptools",
                                                                        "-distutils-hack", "hypothesis"}
    assert normal <= set(seeded_cache.LIBRARIES), normal - set(seeded_cache.LIBRARIES)


# ---------------------------------------------------------------------------------------------------------------
# The store in the process: once per key, an LRU, threads, forks


def test_the_store_keeps_at_most_KEEP_seedings_and_removes_the_evicted_files(
        cache: Path, seedings: list[tuple[str, int]]) -> None:
    store = SeededTemplates()
    keep = SeededTemplates.KEEP
    paths = [store.database(TINY, seed) for seed in range(keep + 1)]
    assert not paths[0].exists(), "the least recent seeding's file stayed"
    assert all(path.exists() for path in paths[1:])
    scratch = paths[1].parent
    assert len(list(scratch.glob("*.sqlite"))) == keep
    assert store.database(TINY, 1) == paths[1]  # a use: the most recent now
    newest = store.database(TINY, keep + 1)
    assert not paths[2].exists() and paths[1].exists() and newest.exists()
    assert len(list(scratch.glob("*.sqlite"))) == keep
    again = store.database(TINY, 0)
    assert again != paths[0] and again.exists()
    assert store.state(TINY, 0) == store.state(TINY, 0) and len(store.state(TINY, 0)["blind_note"]) == 3
    assert len(list(scratch.glob("*.sqlite"))) == keep
    assert len(seedings) == keep + 3
    assert not cache.exists()


def test_threads_asking_for_one_key_share_one_seeding(seedings: list[tuple[str, int]]) -> None:
    store = SeededTemplates()
    barrier = threading.Barrier(6)
    states: list[object] = []
    paths: list[Path] = []

    def ask() -> None:
        barrier.wait()
        states.append(store.state(TINY, 7))
        paths.append(store.database(TINY, 7))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seedings == [(SITE, 7)]
    assert len(states) == 6 and all(state is states[0] for state in states)
    assert len(set(paths)) == 1


def test_copy_to_hands_out_whole_seedings_while_other_threads_evict(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = SeededTemplates()
    store.KEEP = 1  # every other seeding evicts the copied one

    def slow_copy(source: Path, target: Path) -> object:  # widens the window between handing out a path and copying
        time.sleep(0.002)
        return shutil.copyfile(source, target)

    monkeypatch.setattr(seeding, "shutil", types.SimpleNamespace(copyfile=slow_copy))
    expected = dump(seed_file(TINY, 1, tmp_path / "expected.sqlite"))
    failures: list[BaseException] = []
    copies: list[Path] = []

    def copy() -> None:
        try:
            for number in range(15):
                target = tmp_path / f"copy-{number}.sqlite"
                store.copy_to(TINY, 1, target)
                copies.append(target)
        except BaseException as error:
            failures.append(error)

    def evict() -> None:
        try:
            for seed in range(2, 17):
                store.state(TINY, seed)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=copy), threading.Thread(target=evict)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert len(copies) == 15 and all(dump(path) == expected for path in copies)


def _child_seeds(store: SeededTemplates, queue: Any) -> None:
    path = store.database(TINY, 3)
    queue.put((str(path), store.state(TINY, 3)["blind_note"]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_seeds_into_a_store_of_its_own() -> None:
    store = SeededTemplates()
    parent_path = store.database(TINY, 3)
    parent_rows = store.state(TINY, 3)["blind_note"]
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_seeds, args=(store, queue))
    child.start()
    child_path, child_rows = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert Path(child_path) != parent_path and Path(child_path).parent != parent_path.parent
    assert child_rows == parent_rows
    assert parent_path.exists() and store.database(TINY, 3) == parent_path


_FORK_EXIT = """
import json, os, sys
from pathlib import Path
os.environ["COMPUTEROPS_SEEDED_CACHE"] = "off"
from sites.kit.seeding import SEEDED
from sites.registry import SITES
webmail = SITES["webmail"]
parent = SEEDED.database(webmail, 1)
pid = os.fork()
if pid == 0:
    SEEDED.database(webmail, 1)  # the child's own store
    sys.exit(0)                  # an ordinary exit
os.waitpid(pid, 0)
result = {"parent_file": parent.exists()}
try:
    SEEDED.copy_to(webmail, 1, Path(sys.argv[1]))
    result["copied"] = True
except OSError as error:
    result["copied"] = repr(error)
print(json.dumps(result))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_exiting_normally_leaves_the_parents_seedings(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _FORK_EXIT, str(tmp_path / "copy.sqlite")], cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"parent_file": True, "copied": True}


def test_the_rows_a_task_draws_are_the_tenants_rows(cache: Path, tmp_path: Path) -> None:
    registry = TenantRegistry(tmp_path / "registry", sites={SITE: WEBMAIL})
    try:
        tenant = registry.create(SITE, 2)
        snapshot = tenant.snapshot()
        rows = seeding.seeded_rows(WEBMAIL, 2)
        assert set(rows) == set(snapshot)
        for table, table_rows in rows.items():
            assert list(table_rows) == snapshot[table]
    finally:
        registry.close()


@pytest.fixture(autouse=True)
def _no_stray_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    stray = [thread for thread in threading.enumerate() if thread not in before and thread.is_alive()
             and not thread.daemon]
    assert not stray, stray
