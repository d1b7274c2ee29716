"""Format versions of everything ComputerOps writes to disk, and the one rule for reading them.

Every file is a pydantic model with a `format` field `computerops.<kind>/<n>` (the idea of inspect_ai's
`EvalLog.version`): a reader accepts the versions it knows and refuses any other with a message naming it. A file
written before its kind carried a version has no `format` field and is read as version 1, the format it was then
(the optional fields that version 1 grew since have defaults, each saying what older files lack). A change a
version-1 reader would misread is a new version, with its reader, never a silent reinterpretation.
The formats that predate this module keep their constants beside their models (`RUN_FORMAT`, `SUBSET_FORMAT`,
`RECEIPT_FORMAT`, `CORPUS_FORMAT`, `BENCH_FORMAT`, `AUDIT_FORMAT`, `REPORT_FORMAT`); `tests/test_formats.py` finds every
`Versioned` model wherever it is.

The raw witness files of an episode (`operations.json`, `journal.json`, `final_state.json`: lists and maps of the
`sites.kit.records` models) and `checksums.sha256` (the `sha256sum` text format) are the run directory's layout,
versioned by the manifest's format.
"""

from __future__ import annotations

from typing import Any, Final, get_args

from pydantic import BaseModel, model_validator

MANIFEST: Final = "computerops.manifest/2"
"""2: each operation records what its response showed and which app served it (`Operation.shown`, `Operation.app`);
a manifest/1 run's operations lack both (replay compares them only where recorded)."""
EPISODE_RECORD: Final = "computerops.episode/2"
"""2: a claim in plain text (`text_claim`), replies without usage (`no_usage`) and, in runs with a fallback, the
replies each endpoint answered (`replies_by_upstream`) are recorded, and a stream the endpoint itself cut ends the
episode as an infrastructure failure; `verify` recomputes an episode/1 record by the rules it was written under (none
of these)."""
EPISODE_RECORD_1: Final = "computerops.episode/1"
TRANSCRIPT: Final = "computerops.transcript/1"
VERDICT: Final = "computerops.verdict/1"
STARTED: Final = "computerops.started/1"
ADMITTED: Final = "computerops.admitted/1"
RESUME: Final = "computerops.resume/2"
"""2: a resume records how it was carried out (`execution`: on Ray, the workers it started with), so a worker it lost
is named in the run's files as the manifest names the first workers."""
RESUME_1: Final = "computerops.resume/1"
WORKER_EVENT: Final = "computerops.worker_event/1"
LOST_WORKER: Final = "computerops.lost_worker/1"
VERIFICATION: Final = "computerops.verification/1"
JOB: Final = "computerops.job/1"
JOB_PROCESS: Final = "computerops.job_process/1"
LAUNCHED: Final = "computerops.launched/1"


class UnknownFormat(ValueError):
    """A file of a format version this ComputerOps does not read."""


class Versioned(BaseModel):
    """A model written to disk with its format version; subclasses set `format: Literal[<VERSION>] = <VERSION>`, or
    `Literal[<VERSION>, <OLDER>...] = <VERSION>` when this reader also reads older versions (it writes the newest)."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_format(cls, data: Any) -> Any:
        if isinstance(data, dict) and "format" in data:
            field = cls.model_fields["format"]
            current = field.default
            readable = get_args(field.annotation) or (current,)
            found = data["format"]
            if found not in readable:
                also = "".join(f", {older!r}" for older in readable if older != current)
                raise UnknownFormat(f"format {found!r} is not one this ComputerOps reads (it reads {current!r}{also}); "
                                    "read it with the ComputerOps version that wrote it")
        return data
