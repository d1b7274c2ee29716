"""Format versions (computerops/core/formats.py): every model written to disk names its version, a reader refuses
versions it does not know by name, and a file written before versions were recorded reads as version 1."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

import adapter
import computerops
import replays
import verifier
from computerops.core.formats import Versioned
from computerops.runs.bundle import RunDirectory
from computerops.runs.verification import verify_run
from replays.corpus import CorpusEntry

for package in (computerops, adapter, replays, verifier):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)


def versioned_models() -> list[type[Versioned]]:
    found, todo = [], list(Versioned.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return sorted(found, key=lambda c: c.__qualname__)


MODELS = versioned_models()
FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
RECORDED = "001-helpdesk.solve-ticket@1--oracle"


def test_every_versioned_model_has_its_own_format_name() -> None:
    names = [m.model_fields["format"].default for m in MODELS]
    assert len(MODELS) >= 12  # manifest, record, transcript, verdict, started, resume, verification, ...
    assert all(isinstance(n, str) and re.fullmatch(r"computerops\.[a-z_]+/\d+", n) for n in names), names
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__qualname__)
def test_a_reader_refuses_an_unknown_version_naming_it(model: type[Versioned]) -> None:
    current = model.model_fields["format"].default
    kind, version = current.rsplit("/", 1)
    for unknown in (f"{kind}/{int(version) + 1}", "computerops.other/1", "", 7):
        with pytest.raises(ValidationError) as refused:
            model.model_validate({"format": unknown})
        assert f"format {unknown!r} is not one this ComputerOps reads (it reads {current!r}" in str(refused.value)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__qualname__)
def test_the_current_version_goes_on_to_the_fields(model: type[Versioned]) -> None:
    with pytest.raises(ValidationError) as refused:
        model.model_validate({"format": model.model_fields["format"].default, "no_such_field": 1})
    assert "not one this ComputerOps reads" not in str(refused.value)


def test_a_file_written_before_versions_reads_as_version_1() -> None:
    entries = sorted(Path(replays.__file__).parent.joinpath("corpus").rglob("*.json"))[:5]
    assert entries
    for path in entries:
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = CorpusEntry.model_validate(data)
        data.pop("format")
        assert CorpusEntry.model_validate(data) == entry


async def test_a_run_written_before_formats_were_versioned_still_verifies(tmp_path: Path) -> None:
    # tests/fixtures/runs/before-formats: `computerops run --endpoint scripted:oracle,false-finish --tasks
    # helpdesk.solve-ticket@1` (SCRIPTED policies) with its files as the commit before versions wrote them: no format
    # field but in the manifest, receipts and summary, no admitted markers (scripts/make_unversioned_run.py, run again
    # when the helpdesk's pages change: the replay compares every page the run was shown).
    run = tmp_path / "before-formats"
    shutil.copytree(FIXTURE_RUN, run)
    assert "format" not in json.loads((run / "episodes" / RECORDED / "transcript.json").read_text())
    verification = await verify_run(RunDirectory.open(run))
    assert verification.passed, verification.problems
    assert verification.episodes_replayed == 2


async def test_a_run_of_an_unknown_format_is_refused_naming_it(tmp_path: Path) -> None:
    run = tmp_path / "from-the-future"
    shutil.copytree(FIXTURE_RUN, run)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "format": "computerops.manifest/99"}))
    verification = await verify_run(RunDirectory.open(run))
    assert not verification.passed
    assert any("'computerops.manifest/99' is not one this ComputerOps reads" in p for p in verification.problems)
