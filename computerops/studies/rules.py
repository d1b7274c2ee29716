"""The rules the registry's studies keep with one another, with the run and with its report, checked where they
apply: names, owned record fields and report fields unique (`check_studies`, when the registry is read), the files
a study's evidence names (`evidence_problem`, when the run takes an episode's evidence; `unclaimed`, when `verify`
reads it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

from pydantic import JsonValue

from computerops.runs.bundle import RUN_EPISODE_FILES
from computerops.studies.base import Study

RUN_RECORD_FIELDS = frozenset({"episode_id", "task_id", "task_sha256", "wall_s", "started_s", "evidence_sha256",
                               "replay", "format", "studies"})
"""Fields of an episode's record the run fills besides those `derived_fields` computes: no study may own one."""

RUN_REPORT_FIELDS = frozenset({"format", "run_id", "scripted", "total", "by_endpoint", "by_upstream", "evidence_level",
                               "evidence_level_meaning", "completeness", "bootstrap_seed", "bootstrap_resamples",
                               "provenance", "loops", "instances", "studies"})
"""Fields of a `RunReport` (computerops/report/run.py) the report fills itself: no study may fill one. Every other
field of it is a registered study's `report_fields` (tests/test_study_seam.py holds the two to the model)."""


def check_studies(studies: Sequence[Study]) -> None:
    """ValueError, naming the studies, where two share a name, an owned record field, a report field or an audit's
    mutant class (`audit_classes`), a study owns a field the run or the report fills itself, or a study's evidence
    patterns could name a file outside the episode's folder or one the run writes itself."""
    names: dict[str, Study] = {}
    owners: dict[str, str] = {}
    reporters: dict[str, str] = {}
    auditors: dict[str, str] = {}
    for study in studies:
        if study.name in names:
            raise ValueError(f"two studies share the name {study.name!r}: {type(names[study.name]).__name__} and "
                             f"{type(study).__name__}")
        names[study.name] = study
        _claim_once(study, study.audit_classes, auditors, frozenset(), "both bring the audit's mutant class", "")
        _claim_once(study, study.owned_fields, owners, RUN_RECORD_FIELDS, "both own the record field",
                    "owns {!r}, a field the run fills itself")
        _claim_once(study, study.report_fields, reporters, RUN_REPORT_FIELDS, "both fill the report field",
                    "fills the report field {!r}, which the report fills itself")
        for pattern in study.evidence_files:
            if _leaves_folder(pattern):
                raise ValueError(f"study {study.name}: evidence pattern {pattern!r} leaves the episode's folder")
            if taken := [name for name in RUN_EPISODE_FILES if fnmatchcase(name, pattern)]:
                raise ValueError(f"study {study.name}: evidence pattern {pattern!r} names the run's own {taken}")


def _claim_once(study: Study, names: Iterable[str], claimed: dict[str, str], reserved: frozenset[str], shared: str,
                own: str) -> None:
    """Record that `study` claims `names` in `claimed` (name -> study); ValueError where another study claimed one
    ("studies A and B {shared} 'name'") or it is `reserved` ("study B {own}", formatted with the name)."""
    for name in sorted(names):
        if name in reserved:
            raise ValueError(f"study {study.name} " + own.format(name))
        if name in claimed:
            raise ValueError(f"studies {claimed[name]} and {study.name} {shared} {name!r}")
        claimed[name] = study.name


def _leaves_folder(name: str) -> bool:
    """Whether a name (or pattern) relative to the episode's folder could leave it: absolute, `..`, a backslash, or
    empty."""
    path = PurePosixPath(name)
    return path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts


def claims(study: Study, name: str) -> bool:
    """Whether `name` (relative to the episode's folder) is one of the study's evidence files."""
    return any(fnmatchcase(name, pattern) for pattern in study.evidence_files)


def evidence_problem(study: Study, name: str, writers: Mapping[str, str]) -> str | None:
    """Why the study may not name `name` as its evidence of an episode (`writers`: the files named so far, by the run
    ("the run") or a study's name), or None."""
    if _leaves_folder(name):
        return f"study {study.name}: evidence file {name!r} leaves the episode's folder"
    if name in RUN_EPISODE_FILES or writers.get(name) == "the run":
        return f"study {study.name}: evidence file {name!r} is the run's own"
    if name in writers:
        return f"studies {writers[name]} and {study.name} both name the evidence file {name!r}"
    if not claims(study, name):
        return (f"study {study.name}: evidence file {name!r} is not among its evidence files "
                f"{list(study.evidence_files)}")
    return None


def unclaimed(names: Sequence[str], studies: Sequence[Study]) -> list[str]:
    """The hashed evidence files of an episode that neither the run nor a registered study claims."""
    return [name for name in names
            if name not in RUN_EPISODE_FILES and not any(claims(study, name) for study in studies)]


def study_parts(
    studies: Sequence[Study], what: str, owned: Callable[[Study], tuple[str, ...]],
    fill: Callable[[Study], Mapping[str, Any]], entry: Callable[[Study], JsonValue | None], reserved: frozenset[str],
) -> tuple[dict[str, Any], dict[str, JsonValue]]:
    """Each study's part of a record or report (`what`: "record" or "report"): the fields it owns (`owned`), as it
    fills them (`fill`), and the map entries (`entry`) of the studies that own none, under their names. ValueError,
    naming the study, where one fills other fields than its own, one another study filled, or one of `reserved` (the
    fields the record or report fills itself)."""
    filled: dict[str, Any] = {}
    entries: dict[str, JsonValue] = {}
    for study in studies:
        fields = fill(study)
        own = owned(study)
        if set(fields) != set(own):
            raise ValueError(f"study {study.name} filled the {what} fields {sorted(fields)}, not its own "
                             f"{sorted(own)}")
        if overlap := set(fields) & set(filled):
            raise ValueError(f"study {study.name} fills the {what} fields {sorted(overlap)}, which another study owns")
        if clash := set(fields) & reserved:
            raise ValueError(f"study {study.name} fills {sorted(clash)}, a {what} field the {what} fills itself")
        filled.update(fields)
        if not own and (found := entry(study)) is not None:
            entries[study.name] = found
    return filled, entries
