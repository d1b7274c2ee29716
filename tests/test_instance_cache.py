"""Generated instances kept on disk (tasks/instance_cache.py): what is read back is exactly what generating gives, and
nothing else is ever used — a changed, foreign or stale file is generated anew, a site the key does not cover is never
kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from toy_site import TASKS, TOY

from computerops.catalog.warming import shares
from sites.registry import registered
from tasks import instance_cache
from tasks.catalog import CATALOG_ROOT, InstanceUndefined, load_template

FIXED = CATALOG_ROOT / "helpdesk" / "reply-without-escalating.yaml"
VARYING = CATALOG_ROOT / "hrdesk" / "answer-claim-by-receipt.yaml"
TWIN = CATALOG_ROOT / "hrdesk" / "injection-claim-rejects-leave.yaml"
WITHIN = CATALOG_ROOT / "invoices" / "correct-totals-within-limit.yaml"
UNDEFINED_SEED = 128921598678161
"""A seed at which `invoices.correct-totals-within-limit` defines no instance (no payable record fits its filter)."""


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "instances"
    monkeypatch.setenv(instance_cache.ENVIRONMENT, str(root))
    return root


def files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.json"))


@pytest.mark.parametrize("path", [FIXED, VARYING, TWIN], ids=["not-varying", "varying", "twin"])
def test_an_instance_read_back_is_the_generated_instance(kept: Path, monkeypatch: pytest.MonkeyPatch,
                                                          path: Path) -> None:
    seed = load_template(path).seeds[-1]
    generated = load_template(path).instance(seed)  # a fresh template: nothing in memory, so generated and kept
    assert len(files(kept)) == 1
    read = load_template(path).instance(seed)
    assert read == generated
    monkeypatch.setenv(instance_cache.ENVIRONMENT, "off")
    assert load_template(path).instance(seed) == generated  # and both are what generating without the cache gives


def test_a_kept_instance_changed_on_disk_is_not_used_but_generated_and_rewritten(kept: Path) -> None:
    seed = load_template(VARYING).seeds[0]
    generated = load_template(VARYING).instance(seed)
    [path] = files(kept)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert generated.spec.instruction in data["spec"]["instruction"]
    data["spec"]["instruction"] = "Approve every claim."
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_template(VARYING).instance(seed) == generated
    assert json.loads(path.read_text(encoding="utf-8"))["spec"]["instruction"] == generated.spec.instruction


@pytest.mark.parametrize("change", ["garbage", "format", "key", "parameters", "template_sha256", "sha256-only"])
def test_a_file_not_of_this_key_format_or_instance_is_generated_anew(kept: Path, change: str) -> None:
    seed = load_template(VARYING).seeds[0]
    generated = load_template(VARYING).instance(seed)
    [path] = files(kept)
    data = json.loads(path.read_text(encoding="utf-8"))
    if change == "garbage":
        path.write_bytes(b"\x00not json")
    else:
        if change == "format":
            data["format_version"] = 2
        elif change == "key":
            data["key"] = "0" * 64
        elif change == "parameters":
            data["instance"]["parameters"] = {"claim": "X-0000"}
            data["sha256"] = "f" * 64
        elif change == "template_sha256":
            data["instance"]["template_sha256"] = "0" * 64
        else:
            data["sha256"] = "0" * 64
        path.write_text(json.dumps(data), encoding="utf-8")
    assert load_template(VARYING).instance(seed) == generated


def test_a_seed_without_an_instance_is_kept_as_such_and_named_at_the_readers_path(kept: Path, tmp_path: Path) -> None:
    with pytest.raises(InstanceUndefined) as generated:
        load_template(WITHIN).instance(UNDEFINED_SEED)
    [path] = files(kept)
    assert json.loads(path.read_text(encoding="utf-8"))["outcome"] == "undefined"
    copy = tmp_path / "elsewhere" / WITHIN.name  # the same bytes under another path: the same instance (none)
    copy.parent.mkdir()
    shutil.copyfile(WITHIN, copy)
    with pytest.raises(InstanceUndefined) as read:
        load_template(copy).instance(UNDEFINED_SEED)
    assert str(read.value) == str(generated.value).replace(str(WITHIN), str(copy))
    assert read.value.reason == generated.value.reason and "no" in read.value.reason
    assert files(kept) == [path]


def test_a_changed_task_file_is_another_key(kept: Path, tmp_path: Path) -> None:
    copy = tmp_path / VARYING.name
    shutil.copyfile(VARYING, copy)
    seed = load_template(copy).seeds[0]
    first = load_template(copy).instance(seed)
    copy.write_text(copy.read_text(encoding="utf-8") + "\n# a comment changes the file's hash\n", encoding="utf-8")
    second = load_template(copy).instance(seed)
    assert len(files(kept)) == 2
    assert second.sha256 != first.sha256 and second.spec == first.spec


def test_switched_off_nothing_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(instance_cache.ENVIRONMENT, "off")
    assert instance_cache.cache_root() is None
    load_template(VARYING).instance(2)
    assert list(tmp_path.rglob("*.json")) == []


def test_a_site_registered_for_a_while_is_never_kept(kept: Path) -> None:
    with registered(TOY):
        [path] = sorted(TASKS.rglob("*.yaml"))
        template = load_template(path)
        assert not instance_cache.shipped_site(template.site)
        template.instance(template.seeds[0])
    assert files(kept) == []


def test_the_code_digest_covers_code_and_data_but_not_task_files(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for folder in instance_cache.CODE_FOLDERS:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "module.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "sites" / "names.json").write_text("[]", encoding="utf-8")
    (tmp_path / "tasks" / "catalog").mkdir()
    (tmp_path / "tasks" / "catalog" / "t.yaml").write_text("id: t\n", encoding="utf-8")
    monkeypatch.setattr(instance_cache, "REPOSITORY", tmp_path)

    def digest() -> str:
        instance_cache.code_digest.cache_clear()
        return instance_cache.code_digest()

    try:
        base = digest()
        (tmp_path / "tasks" / "catalog" / "t.yaml").write_text("id: u\n", encoding="utf-8")
        assert digest() == base  # a task file is in its own template's hash, not the code's
        for changed in ("tasks/module.py", "sites/module.py", "sites/names.json", "verifier/module.py",
                        "computerops/core/module.py"):
            before = (tmp_path / changed).read_text(encoding="utf-8")
            (tmp_path / changed).write_text(before + " ", encoding="utf-8")
            assert digest() != base, changed
            (tmp_path / changed).write_text(before, encoding="utf-8")
            assert digest() == base, changed
    finally:
        monkeypatch.undo()
        instance_cache.code_digest.cache_clear()


def test_warming_keeps_each_sites_files_in_one_share_and_balances_the_seeds() -> None:
    sites = {"a": {"a1": 10, "a2": 10}, "b": {"b1": 15}, "c": {"c1": 4, "c2": 1}, "d": {"d1": 3}}
    two = shares(sites, 2)
    assert sorted(path for share in two for path in share) == ["a1", "a2", "b1", "c1", "c2", "d1"]
    for files in sites.values():
        assert sum(any(path in share for path in files) for share in two) == 1  # a site in one share only
    totals = sorted(sum(seeds for files in sites.values() for path, seeds in files.items() if path in share)
                    for share in two)
    assert totals == [20, 23]
    assert shares(sites, 9) == [["a1", "a2"], ["b1"], ["c1", "c2"], ["d1"]]
    assert shares(sites, 0) == [["a1", "a2", "b1", "c1", "c2", "d1"]]


def test_only_the_newest_code_versions_keep_their_instances(kept: Path) -> None:
    kept.mkdir(parents=True)
    current = instance_cache.code_digest()[:16]
    older = [kept / f"{n:016x}" for n in range(5)]
    for age, folder in enumerate(older):
        (folder / "t").mkdir(parents=True)
        os.utime(folder, (1_000_000 + age, 1_000_000 + age))
    (kept / "notes").mkdir()  # not a code version's folder: left alone
    load_template(VARYING).instance(3)  # the first instance of this code: the oldest versions go
    left = sorted(path.name for path in kept.iterdir())
    assert current in left and "notes" in left
    assert sorted(set(left) - {current, "notes"}) == [older[4].name, older[3].name][::-1]
    assert instance_cache.prune(kept) == []  # nothing more to remove; the current code's never is
