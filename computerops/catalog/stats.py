"""The catalog's counts: templates and published instances per site, family and difficulty level, and which
families a site lacks. Read from the template files alone (no instance is generated), so it is instant."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tasks.catalog import Catalog, TaskTemplate

STATS_FORMAT: Literal["computerops.catalog_stats/1"] = "computerops.catalog_stats/1"


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    templates: int
    instances: int


class CatalogStats(BaseModel):
    """What `computerops tasks stats --json` prints."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.catalog_stats/1"] = STATS_FORMAT
    templates: int
    instances: int
    """Published instances (fresh ones are drawn at reservation and never counted here)."""
    sites: int
    per_site: dict[str, Counts]
    per_family: dict[str, Counts]
    per_difficulty: dict[str, Counts]
    varying_templates: int
    """Templates with parameters: their instances differ in the record, values or path."""
    single_instance: dict[str, str]
    """Templates that say why they cannot vary: id -> the reason."""
    fixed_unexplained: list[str]
    """Task files with no `template:` block yet: one instance, no parameters, no reason given."""
    families_missing: dict[str, list[str]]
    """Site -> the catalog's families it has no template of."""


def _counts(templates: list[TaskTemplate], key: str) -> dict[str, Counts]:
    by: dict[str, list[TaskTemplate]] = {}
    for template in templates:
        by.setdefault(str(template.data.get(key, "medium" if key == "difficulty" else "")), []).append(template)
    return {name: Counts(templates=len(group), instances=sum(len(t.seeds) for t in group))
            for name, group in sorted(by.items())}


def catalog_stats(catalog: Catalog, sites: list[str]) -> CatalogStats:
    """The counts of `catalog` over the registered `sites` (a site without templates counts as zero)."""
    templates = list(catalog.templates.values())
    per_site = _counts(templates, "site")
    for site in sites:
        per_site.setdefault(site, Counts(templates=0, instances=0))
    families = sorted({str(t.data.get("family", "")) for t in templates})
    present = Counter((t.site, str(t.data.get("family", ""))) for t in templates)
    missing = {site: [f for f in families if not present[(site, f)]] for site in sorted(per_site)}
    return CatalogStats(
        templates=len(templates), instances=len(catalog), sites=len(per_site),
        per_site=dict(sorted(per_site.items())), per_family=_counts(templates, "family"),
        per_difficulty=_counts(templates, "difficulty"),
        varying_templates=sum(t.varying for t in templates),
        single_instance={t.id: t.block.single_instance for t in templates
                         if t.block is not None and t.block.single_instance},
        fixed_unexplained=[t.id for t in templates if t.block is None],
        families_missing={site: found for site, found in missing.items() if found},
    )
