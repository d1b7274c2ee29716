"""Make tests/fixtures/runs/before-formats from a fresh run: every file's `format` field taken out, as ComputerOps
wrote its files before they were versioned (issue 15), and the hashes that cover them recomputed.

    .venv/bin/computerops run --endpoint scripted:oracle,false-finish --tasks helpdesk.solve-ticket@1 --out /tmp/run
    .venv/bin/python scripts/make_unversioned_run.py /tmp/run tests/fixtures/runs/before-formats

Run it again when the helpdesk's pages or seed change (an old run's replay compares every page it was shown, so a
run recorded against other pages no longer replays PASS): the test it serves is that files without a format field
read as version 1 and verify, not that the site never changes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

VERSIONED_THEN = {"manifest.json", "receipt.json", "summary.json"}
"""Files that carried their format already then (the manifest, the receipts): kept as written; the summary is written
again in the report's format 1 (no format field), as runs sealed it then."""


def _unversioned(value: Any) -> Any:
    return {k: v for k, v in value.items() if k != "format"} if isinstance(value, dict) else value


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _summary_in_format_1(run: Path) -> None:
    from computerops.report.run import report_json_as, summarize
    from computerops.runs.bundle import RunDirectory

    bundle = RunDirectory.open(run)
    summary = report_json_as(summarize(bundle.manifest(), bundle.records()), {})  # format 1: names no format
    (run / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


def main(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for marker in target.glob("episodes/*/admitted.json"):  # not written before formats either
        marker.unlink()
    for path in sorted(target.rglob("*.json")):
        if path.name in VERSIONED_THEN:
            continue
        path.write_text(json.dumps(_unversioned(json.loads(path.read_text(encoding="utf-8"))), indent=2),
                        encoding="utf-8")
    _summary_in_format_1(target)
    records = []
    for line in (target / "episodes.jsonl").read_text(encoding="utf-8").splitlines():
        record = _unversioned(json.loads(line))
        episode = target / "episodes" / record["episode_id"]
        record["evidence_sha256"] = {name: _sha256(episode / name) for name in record["evidence_sha256"]}
        records.append(json.dumps(record, separators=(",", ":")))
    (target / "episodes.jsonl").write_text("".join(r + "\n" for r in records), encoding="utf-8")
    unsealed = {"checksums.sha256", "verification.json", ".writer.lock"}
    files = sorted(p for p in target.rglob("*") if p.is_file() and p.name not in unsealed)
    (target / "checksums.sha256").write_text(
        "".join(f"{_sha256(p)}  {p.relative_to(target).as_posix()}\n" for p in files), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
