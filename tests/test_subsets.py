"""Reserved subsets: a reproducible draw, hash-locked, refused when a task or the file changed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from computerops.catalog.subsets import (
    ReservedSubset,
    SubsetError,
    draw,
    load_subset,
    reserve_subset,
    subset_tasks,
    write_subset,
)
from computerops.cli.main import app
from computerops.service.launch import select_tasks_or_subset
from tasks import load_catalog, load_task

runner = CliRunner()
CATALOG = load_catalog()


def test_the_draw_is_the_documented_ranking() -> None:
    ids = [f"site.task-{n}" for n in range(20)]
    expected = sorted(sorted(ids, key=lambda i: hashlib.sha256(f"7:{i}".encode()).hexdigest())[:5])
    assert draw(ids, 5, 7) == expected
    assert draw(ids, 5, 7) == draw(list(reversed(ids)), 5, 7)  # the order given does not matter
    assert draw(ids, 5, 8) != expected  # another seed, another draw
    with pytest.raises(SubsetError, match="more than the 20 tasks"):
        draw(ids, 21, 7)
    with pytest.raises(SubsetError, match="at least 1"):
        draw(ids, 0, 7)


def test_a_reserved_subset_records_its_inputs_and_each_task_hash(tmp_path: Path) -> None:
    count = min(2, len(CATALOG))
    subset = reserve_subset(CATALOG, count, 11)
    assert (subset.count, subset.seed, subset.catalog_size) == (count, 11, len(CATALOG))
    assert [t.id for t in subset.tasks] == draw(sorted(CATALOG), count, 11)
    assert all(t.sha256 == CATALOG[t.id].sha256 for t in subset.tasks)
    assert subset.lock_sha256 == subset.computed_lock()
    path = tmp_path / "subset.json"
    write_subset(path, subset)
    assert load_subset(path) == subset
    with pytest.raises(SubsetError, match="never overwritten"):
        write_subset(path, subset)


def test_an_edited_subset_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "subset.json"
    write_subset(path, reserve_subset(CATALOG, 1, 3))
    data = json.loads(path.read_text())
    data["seed"] = 4
    path.write_text(json.dumps(data))
    with pytest.raises(SubsetError, match="edited after it was reserved"):
        load_subset(path)


def test_a_task_changed_since_the_reservation_is_named(tmp_path: Path) -> None:
    path = tmp_path / "subset.json"
    subset = reserve_subset(CATALOG, 1, 5)
    write_subset(path, subset)
    [task_id] = subset.task_ids
    changed_file = tmp_path / "changed.yaml"
    shutil.copy(CATALOG[task_id].path, changed_file)
    changed_file.write_text(changed_file.read_text() + "\n# an edit\n")
    catalog = {**CATALOG, task_id: load_task(changed_file)}
    with pytest.raises(SubsetError, match=f"{task_id} changed since the subset was reserved"):
        subset_tasks(subset, catalog, path)
    without = {k: v for k, v in CATALOG.items() if k != task_id}
    with pytest.raises(SubsetError, match=f"{task_id} is no longer in the catalog"):
        subset_tasks(subset, without, path)


def test_reserve_on_the_command_line_and_run_refuses_a_changed_subset(tmp_path: Path) -> None:
    path = tmp_path / "reserved.json"
    result = runner.invoke(app, ["subset", "reserve", "--count", "1", "--seed", "9", "--out", str(path)])
    assert result.exit_code == 0, result.output
    subset = load_subset(path)
    assert subset.task_ids[0] in result.output
    tasks, ref = select_tasks_or_subset(str(path))
    assert [t.id for t in tasks] == subset.task_ids and ref is not None and ref.lock_sha256 == subset.lock_sha256
    again = runner.invoke(app, ["subset", "reserve", "--count", "1", "--seed", "9", "--out", str(path)])
    assert again.exit_code == 2 and "never overwritten" in again.output
    data = json.loads(path.read_text())
    data["tasks"][0]["sha256"] = "0" * 64
    data["lock_sha256"] = ""
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data))
    run = runner.invoke(app, ["run", "--tasks", str(tampered), "--endpoint", "scripted:oracle",
                              "--out", str(tmp_path / "run")])
    assert run.exit_code == 2 and "edited after it was reserved" in " ".join(run.output.split())
    assert not (tmp_path / "run").exists()
    relocked = ReservedSubset.model_validate(data)  # as if the task had changed after an honest reservation
    stale = tmp_path / "stale.json"
    stale.write_text(relocked.model_copy(update={"lock_sha256": relocked.computed_lock()}).model_dump_json())
    run = runner.invoke(app, ["run", "--tasks", str(stale), "--endpoint", "scripted:oracle",
                              "--out", str(tmp_path / "run")])
    assert run.exit_code == 2
    assert f"{subset.task_ids[0]} changed since the subset was reserved" in " ".join(run.output.split())
    assert not (tmp_path / "run").exists()
    missing = runner.invoke(app, ["run", "--tasks", str(tmp_path / "nope.json"), "--endpoint", "scripted:oracle",
                                  "--out", str(tmp_path / "run")])
    assert missing.exit_code == 2 and "no such subset file" in missing.output
