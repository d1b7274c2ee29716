"""The site checklist of docs/extending.md, proved: tests/toy_site, a site built only with the kit and registered for
a while (`sites.registry.registered`), gets the site invariants and `tasks check` with no test of its own; the
invariants catch a defect in a broken copy of it; and every file docs/extending.md names exists.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import test_site_invariants as invariants
from fastapi.testclient import TestClient
from toy_site import TASKS, TOY
from toy_site.pages import TEMPLATES
from toy_site.routes import build_router

from computerops.catalog.checking import check_tasks
from sites.kit import SiteDefinition, TenantRegistry, create_app
from sites.kit.pages import SitePages
from sites.registry import registered, site_definitions, tenant_registry
from tasks import TaskFileError, load_catalog

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "extending.md"
TOY_TASK = "toy.set-mug-quantity@1"


# --- Registering a site for a while ---------------------------------------------------------------------------


def test_the_toy_site_and_its_tasks_are_known_only_while_it_is_registered(tmp_path: Path) -> None:
    assert "toy" not in site_definitions()
    with pytest.raises(TaskFileError, match="site: 'toy' is not a registered site"):
        load_catalog(TASKS)
    with registered(TOY) as sites:
        assert sites["toy"] is TOY and site_definitions() == sites and set(sites) > {"toy"}
        assert list(load_catalog(TASKS)) == [TOY_TASK]
        tenants = tenant_registry(tmp_path)  # the registry as it is now: what every run starts with
        try:
            assert tenants.create("toy", 1).snapshot()["item"][1] == {"id": 2, "name": "Blue mug", "quantity": 3}
        finally:
            tenants.close()
        with pytest.raises(ValueError, match="sites already registered: toy"), registered(TOY):
            pass
        assert site_definitions()["toy"] is TOY, "a refused registration changes nothing"
    assert "toy" not in site_definitions()
    with pytest.raises(TaskFileError, match="site: 'toy' is not a registered site"):
        load_catalog(TASKS)  # the loader's schemas follow the registry: none is kept from the block
    helpdesk = site_definitions()["helpdesk"]
    with pytest.raises(ValueError, match="sites already registered: helpdesk, toy"), registered(TOY, TOY, helpdesk):
        pass
    assert "toy" not in site_definitions()


# --- The site invariants ----------------------------------------------------------------------------------------


def test_the_site_invariants_run_on_the_toy_site_as_on_a_registered_site() -> None:
    # Every test of tests/test_site_invariants.py is parametrised over its SITES (`[toy]` among the ids) and
    # crawls from the start pages of its CATALOG's tasks.
    assert {**site_definitions(), "toy": TOY} == invariants.SITES
    assert invariants.CATALOG[TOY_TASK].spec.site == "toy"
    assert invariants.start_paths(TOY) == ["/toy/"]


@dataclass(frozen=True)
class Served:
    """A site on a fresh tenant registry and app, crawled once from its start pages as the invariants crawl."""

    crawled: invariants.CrawledSite
    registry: TenantRegistry
    client: TestClient


@contextmanager
def served(site: SiteDefinition, root: Path) -> Iterator[Served]:
    registry = TenantRegistry(root, sites={site.name: site})
    try:
        with TestClient(create_app(registry), follow_redirects=False) as client:
            tenant = registry.create(site.name, invariants.EPISODE_SEED)
            visitor = invariants.Visitor(client, site, tenant)
            found = invariants.crawl(visitor)
            pages_only = tenant.operations(), tenant.journal(), tenant.snapshot()
            invariants.submit_every_form(visitor, found.forms)
            episode = tenant.operations(), tenant.journal(), tenant.snapshot()
            yield Served(invariants.CrawledSite(site, tenant, found, pages_only, episode), registry, client)
    finally:
        registry.close()


@dataclass(frozen=True)
class Defect:
    """One edit of a copy of the toy site's templates, and the invariant that must fail on it, with what it says."""

    template: str
    text: str
    replacement: str
    invariant: Callable[[Served], None]
    says: str


SHOWS_THE_SITES_FRAME = (
    invariants.test_every_page_shows_the_sites_navigation_the_logical_time_and_no_token_or_favicon_fetch)
DEFECTS = {
    "an-unlabelled-form-control": Defect(
        "item.html", '<label for="quantity">Quantity</label>\n', "",
        lambda served: invariants.test_every_form_control_has_a_label(served.crawled),
        "<input name='quantity' id='quantity'> has no label"),
    "no-logical-time": Defect(
        "base.html", "<p>Now: {{ now }}</p>", "<p>Signed in.</p>",
        lambda served: SHOWS_THE_SITES_FRAME(served.crawled),
        "/toy/: no 'Now: "),
    "page-text-from-a-random-number": Defect(
        "base.html", "<p>Now: {{ now }}</p>", "<p>Now: {{ now }}, visitor {{ range(10 ** 9) | random }}</p>",
        lambda served: invariants.test_the_same_episode_on_two_fresh_tenants_of_one_seed_gives_identical_evidence(
            served.crawled, served.registry, served.client),
        "operation 1 differs in ['response_digest']"),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_an_invariant_fails_on_a_copy_of_the_toy_site_with_a_defect_and_passes_on_a_faithful_copy(
    defect: str, tmp_path: Path
) -> None:
    edit = DEFECTS[defect]
    faithful, broken = tmp_path / "faithful", tmp_path / "broken"
    for copy in (faithful, broken):
        shutil.copytree(TEMPLATES, copy)
    original = (TEMPLATES / edit.template).read_text(encoding="utf-8")
    assert original.count(edit.text) == 1, f"the defect's text is in {edit.template} once"
    (broken / edit.template).write_text(original.replace(edit.text, edit.replacement), encoding="utf-8")

    def drawn_from(templates: Path) -> SiteDefinition:
        return dataclasses.replace(TOY, router=lambda: build_router(SitePages(templates)))

    with served(drawn_from(faithful), tmp_path / "faithful-tenants") as site:
        edit.invariant(site)
    with served(drawn_from(broken), tmp_path / "broken-tenants") as site, pytest.raises(AssertionError) as failed:
        edit.invariant(site)
    assert edit.says in str(failed.value)


# --- tasks check ------------------------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(600)
async def test_tasks_check_proves_the_toy_sites_task(tmp_path: Path) -> None:
    with registered(TOY):
        tasks = list(load_catalog(TASKS).values())
        [check] = await check_tasks(tasks, tmp_path / "check", lambda _: None)
    assert check.task_id == TOY_TASK
    assert check.ok, [r for r in check.results if not r.ok]
    assert check.solvable and check.noop_rejected
    assert check.negatives_rejected == check.negatives_total >= 3
    assert check.equivalents_accepted == check.equivalents_total == 1
    assert {r.control: r.outcome for r in check.results} == {
        "scripted": "verified_success", "no-op": "false_completion (state)",
        "negative:wrong-count": "false_completion (state)", "negative:never-saved": "false_completion (state)",
        "negative:also-sets-the-cup": "false_completion (forbidden_mutation)",
        "negative:adds-a-mug-instead": "false_completion (forbidden_mutation)",
        "equivalent:opens-the-mug-by-address": "verified_success",
    }


# --- docs/extending.md ------------------------------------------------------------------------------------------

TOP_LEVEL = frozenset(path.name for path in ROOT.iterdir() if not path.name.startswith("."))
"""The repository's own top-level files and folders: a backticked text starting with one of them is a path."""
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_PLACEHOLDER = re.compile(r"<[^<>/]+>")


def named_paths(text: str) -> list[str]:
    """The repository paths a text names in backticks (`sites/registry.py`, `tasks/catalog/<site>/`), in order."""
    return [span for span in _BACKTICKED.findall(text) if span.split("/", 1)[0] in TOP_LEVEL]


def missing_paths(text: str) -> list[str]:
    """The named paths that do not exist; a `<placeholder>` segment stands for any name, so such a path must match
    at least one file or folder."""
    return [path for path in named_paths(text)
            if not (ROOT / path).exists() and not any(ROOT.glob(_PLACEHOLDER.sub("*", path).rstrip("/")))]


def test_every_path_the_extension_guide_names_exists() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert len(set(named_paths(text))) >= 40, "the guide's paths are found"
    assert missing_paths(text) == []


def test_the_guide_has_one_checklist_per_kind_of_extension() -> None:
    headings = re.findall(r"^## (.+)$", GUIDE.read_text(encoding="utf-8"), re.MULTILINE)
    assert headings == ["A site", "A task", "A template", "An attack", "A fault class", "An action",
                        "A report figure", "A scripted policy", "A study"]


def test_the_path_check_sees_a_path_that_does_not_exist() -> None:
    text = ("`sites/registry.py`, `tasks/catalog/<site>/`, `sites/<site>/nowhere.py`, `docs/gone.md`, "
            "`computerops tasks check`, `/toy/items/2`, `SITES`")
    assert named_paths(text) == ["sites/registry.py", "tasks/catalog/<site>/", "sites/<site>/nowhere.py",
                                 "docs/gone.md"]
    assert missing_paths(text) == ["sites/<site>/nowhere.py", "docs/gone.md"]
