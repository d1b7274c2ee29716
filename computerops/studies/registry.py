"""The registry of episode studies: `run_episode`, `derived_fields` and `verify` go through `STUDIES` in this order
(the order also of the study evidence in a record's hashes), and name no study. A new study is one more entry here
(docs/extending.md, "Add a study")."""

from __future__ import annotations

from computerops.persistence.study import LongRunning
from computerops.serving_faults.study import ServingFaults
from computerops.studies.base import Study
from computerops.studies.page_noise import PageNoise
from computerops.studies.rules import check_studies
from computerops.studies.security import Security
from computerops.studies.site_faults import SiteFaults

STUDIES: list[Study] = [SiteFaults(), Security(), ServingFaults(), LongRunning(), PageNoise()]


def registered() -> tuple[Study, ...]:
    """The studies in force, in order (read at each call: a test may add one to `STUDIES`); ValueError where they
    break a rule of computerops/studies/rules.py."""
    studies = tuple(STUDIES)
    check_studies(studies)
    return studies
