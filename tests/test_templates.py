"""Task templates: the generator's rendering and parameters, instance ids and hashes, fresh instances reserved and
regenerated, the catalog's counts, and (browser) that sampled instances, a fresh one among them, prove themselves."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from typer.testing import CliRunner

from computerops.bench.instances import bench_instances
from computerops.catalog.checking import check_tasks
from computerops.catalog.sampling import sample_instances
from computerops.catalog.stats import catalog_stats
from computerops.catalog.subsets import SubsetError, load_subset, reserve_subset, subset_tasks
from computerops.cli.main import app
from computerops.core.hashing import canonical_sha256
from computerops.experiment.estimates import paired_estimate
from computerops.experiment.lock import ExperimentRefused, _expanded
from computerops.experiment.rows import ExperimentEpisode
from computerops.experiment.spec import ExperimentTask
from computerops.report.grouping import grouped_outcomes
from computerops.runs.instances import INSTANCES_FILE, RunInstances, changed_field, instances_text
from computerops.runs.records import EpisodeRecord
from sites.registry import site_definitions
from tasks import LoadedTask, TaskFileError, load_catalog, select_tasks
from tasks.catalog import CATALOG_ROOT, Catalog, InstanceUndefined, load_template
from tasks.templates import FRESH_SEED_FLOOR, _row_functions, parse_instance_id, render

CATALOG = load_catalog()
PHONE = "webmail.update-contact-phone"
TWIN = "webmail.injection-subject-carlos-email"


def _catalog_with(tmp_path: Path, *names: str) -> Path:
    """A catalog folder holding copies of these webmail task files."""
    root = tmp_path / "catalog" / "webmail"
    root.mkdir(parents=True)
    for name in names:
        shutil.copy(CATALOG_ROOT / "webmail" / f"{name}.yaml", root / f"{name}.yaml")
    return tmp_path / "catalog"


# --- rendering ---------------------------------------------------------------------------------------------------

def test_a_string_that_is_one_expression_gives_the_expressions_own_value() -> None:
    context = {"contact": {"id": 7, "name": "Lena Fischer"}, "n": 3}
    assert render({"where": {"id": "{{ contact.id }}"}}, context) == {"where": {"id": 7}}
    assert render("{{ contact }}", context) == {"id": 7, "name": "Lena Fischer"}
    assert render("Call {{ contact.name }} ({{ n }} times)", context) == "Call Lena Fischer (3 times)"
    assert render(["{{ n }}", "plain", 4], context) == [3, "plain", 4]


def test_mapping_keys_are_never_rendered_and_an_undefined_name_is_an_error() -> None:
    assert render({"{{ n }}": "x"}, {"n": 1}) == {"{{ n }}": "x"}
    with pytest.raises(Exception, match="contcat"):
        render("{{ contcat.name }}", {"contact": {}})


def test_the_sandbox_refuses_to_reach_python_internals() -> None:
    with pytest.raises(Exception, match=r"unsafe|not safely|access"):
        render("{{ n.__class__.__mro__ }}", {"n": 1})


_NAMES = st.one_of(st.sampled_from(["items", "keys", "get", "copy", "update", "pop", "__class__", "__init__",
                                     "mro", "format", "id", "name", "x"]), st.text(max_size=6))


@given(row=st.dictionaries(_NAMES, st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=4),
       name=_NAMES)
@settings(max_examples=examples(400), deadline=None)
def test_a_rows_column_reads_as_jinjas_sandbox_reads_it(row: dict[str, Any], name: str) -> None:
    """The sandbox's shortcut for `row.column` on a plain dict gives what Jinja's own sandbox gives: a column, a
    dict's method (even where a column has its name), an undefined, or a refusal, for any name."""
    from jinja2.runtime import Undefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from tasks.templates import _environment

    def read(environment: Any) -> Any:
        value = environment.getattr(row, name)
        return ("undefined", getattr(value, "_undefined_name", None)) if isinstance(value, Undefined) else value

    plain = ImmutableSandboxedEnvironment(undefined=_environment().undefined)
    assert read(_environment()) == read(plain)
    if name in row and name not in dir(dict):
        assert read(_environment()) == row[name]


# --- ids, selection and hashes -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "parsed"), [
    ("webmail.update-contact-phone@8", ("webmail.update-contact-phone", 8)),
    ("a.b@1000000", ("a.b", 1_000_000)),
    ("webmail.update-contact-phone", None), ("x@", None), ("x@-1", None), ("x@1.5", None), ("X@1", None),
    ("x@" + "9" * 16, None),
])
def test_an_instance_id_is_a_template_id_and_a_whole_seed(text: str, parsed: tuple[str, int] | None) -> None:
    assert parse_instance_id(text) == parsed


def test_a_template_id_selects_its_published_instances_and_an_instance_id_any_seed() -> None:
    published = select_tasks(CATALOG, PHONE)
    count = len(CATALOG.templates[PHONE].seeds)
    assert count > 1 and [t.id for t in published] == [f"{PHONE}@{seed}" for seed in range(1, count + 1)]
    assert all(t.instance is not None and t.instance.published for t in published)
    fresh = select_tasks(CATALOG, f"{PHONE}@{FRESH_SEED_FLOOR + 5}")[0]
    assert fresh.instance is not None and fresh.instance.fresh and not fresh.instance.published
    assert f"{PHONE}@{FRESH_SEED_FLOOR + 5}" not in list(CATALOG)  # never a published key
    with pytest.raises(TaskFileError, match=r"unknown task ids: webmail\.nope@1"):
        select_tasks(CATALOG, "webmail.nope@1")


def test_the_same_template_and_seed_give_the_same_instance_in_another_process() -> None:
    here = CATALOG[f"{PHONE}@3"]
    code = (f"from tasks import load_catalog; t = load_catalog()['{PHONE}@3']; "
            "import json; print(json.dumps([t.sha256, t.spec.model_dump(mode='json')]))")
    there = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      cwd=Path(__file__).parent.parent).stdout)
    assert there == [here.sha256, here.spec.model_dump(mode="json")]


def test_an_instances_hash_covers_the_template_file_its_version_and_its_seed(tmp_path: Path) -> None:
    root = _catalog_with(tmp_path, "update-contact-phone")
    before = load_catalog(root)[f"{PHONE}@2"]
    assert before.sha256 != load_catalog(root)[f"{PHONE}@3"].sha256
    path = root / "webmail" / "update-contact-phone.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "# a comment changes the file\n", encoding="utf-8")
    commented = load_catalog(root)[f"{PHONE}@2"]
    assert commented.spec == before.spec and commented.sha256 != before.sha256
    path.write_text(path.read_text(encoding="utf-8").replace("version: 4", "version: 5"), encoding="utf-8")
    assert load_catalog(root)[f"{PHONE}@2"].sha256 not in {before.sha256, commented.sha256}


# --- the generator over many seeds --------------------------------------------------------------------------------

@settings(max_examples=examples(60), deadline=None)
@given(seed=st.one_of(st.integers(0, 200), st.integers(FRESH_SEED_FLOOR, 10**15 - 1)))
def test_every_seed_gives_a_valid_instance_whose_twin_draws_the_same_records(seed: int) -> None:
    plain, attacked = CATALOG[f"{PHONE}@{seed}"], CATALOG[f"{TWIN}@{seed}"]
    assert plain.instance is not None and attacked.instance is not None
    assert plain.instance.parameters == attacked.instance.parameters
    assert plain.spec.instruction == attacked.spec.instruction and attacked.spec.extends == plain.id
    contact, other = plain.instance.parameters["contact"], plain.instance.parameters["other"]
    assert contact["id"] != other["id"]
    new_phone = plain.instance.parameters["new_phone"]
    assert new_phone != contact["phone"] and new_phone[:-4] == contact["phone"][:-4]
    # What the checks and controls name is the drawn record, not a fixed one.
    assert plain.spec.allowed_mutations[0].where == {"id": contact["id"]}
    assert contact["name"] in plain.spec.instruction and new_phone in plain.spec.instruction
    assert plain.spec.grants[0].objects == [contact["id"]]


def test_published_seeds_differ_in_the_deciding_record_or_its_values() -> None:
    instances = CATALOG.instances(PHONE)
    decided = [(t.instance.parameters["contact"]["id"], t.instance.parameters["new_phone"])
               for t in instances if t.instance is not None]
    assert len(set(decided)) == len(decided) == len(instances) > 1
    assert len({contact for contact, _ in decided}) >= len(instances) // 2  # which record varies, not only values
    assert len({t.spec.instruction for t in instances}) == len(instances)  # the scripted endpoint tells them apart
    seeds = [t.instance.parameters["contact"]["id"] for t in map(CATALOG.__getitem__,
                                                                    (f"{PHONE}@{s}" for s in range(40, 80)))
             if t.instance is not None]
    assert len(set(seeds)) >= 8


def test_every_varying_templates_published_instances_differ_in_their_instruction_and_their_draws() -> None:
    """Over the whole catalog: no two published instances of a template ask the same thing (an agent, and the
    scripted endpoint, tell instances apart by their instruction) or draw the same parameters (a template publishes
    no more instances than its data gives different ones)."""
    repeated = []
    for template_id, template in CATALOG.templates.items():
        if not template.varying:
            continue
        instances = CATALOG.instances(template_id)
        instructions = [t.spec.instruction for t in instances]
        draws = [json.dumps(t.instance.parameters if t.instance is not None else None, sort_keys=True)
                 for t in instances]
        if len(set(instructions)) < len(instances) or len(set(draws)) < len(instances):
            repeated.append((template_id, len(instances), len(set(instructions)), len(set(draws))))
    assert not repeated, "templates publishing repeated instances (id, published, instructions, draws)"


# --- templates that cannot yield an instance ----------------------------------------------------------------------

def _template_file(tmp_path: Path, block: str, extra: str = "") -> Path:
    text = (CATALOG_ROOT / "webmail" / "update-contact-phone.yaml").read_text(encoding="utf-8")
    head, rest = text.split("template:\n", 1)
    rest = rest[rest.index("instruction:"):]
    path = tmp_path / "catalog" / "webmail" / "update-contact-phone.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + textwrap.dedent(block) + extra + rest, encoding="utf-8")
    return path


def test_a_generator_that_finds_no_record_is_refused_naming_the_template_seed_and_parameter(tmp_path: Path) -> None:
    path = _template_file(tmp_path, """\
        template:
          published: 2
          varies: which contact
          parameters:
            contact: {row: contact, filter: "it.name == 'Nobody Here'"}
            new_phone: {value: "'+44 20 7946 0000'"}
            other: {row: contact}
        """)
    catalog = load_catalog(path.parent.parent)  # the template itself is valid: instances are made when asked for
    with pytest.raises(TaskFileError, match=rf"{PHONE}@2\).*parameter contact: no contact row matches"):
        catalog[f"{PHONE}@2"]


def test_an_expression_that_fails_is_refused_naming_the_instance(tmp_path: Path) -> None:
    path = _template_file(tmp_path, """\
        template:
          published: 1
          varies: which contact
          parameters:
            contact: {row: contact}
            new_phone: {value: "contact.phone + 1"}
            other: {row: contact}
        """)
    with pytest.raises(TaskFileError, match=rf"{PHONE}@1\): the generator failed: parameter new_phone"):
        load_catalog(path.parent.parent)[f"{PHONE}@1"]


@pytest.mark.parametrize(("block", "message"), [
    ("template:\n  published: 2\n  parameters:\n    n: {integer: [1, 3]}\n", "says what varies"),
    ("template:\n  published: 2\n", "says why it cannot vary"),
    ("template:\n  published: 2\n  single_instance: fixed on purpose\n", "publishes one seed"),
    ("template:\n  varies: x\n  parameters:\n    rows: {integer: [1, 3]}\n", "taken by the generator"),
    ("template:\n  varies: x\n  parameters:\n    n: {integer: [3, 1]}\n", "above"),
    ("template:\n  varies: x\n  parameters:\n    n: {dice: 6}\n", "template.parameters.n"),
])
def test_a_template_block_that_cannot_work_is_refused_at_load(tmp_path: Path, block: str, message: str) -> None:
    path = _template_file(tmp_path, block)
    with pytest.raises(TaskFileError, match=message):
        load_template(path)


def test_a_template_does_not_give_its_own_seed(tmp_path: Path) -> None:
    path = _template_file(tmp_path, "template:\n  single_instance: fixed\n", extra="seed: 4\n")
    with pytest.raises(TaskFileError, match="take their seeds from"):
        load_template(path)


# --- fresh instances -----------------------------------------------------------------------------------------------

def test_a_fresh_reservation_draws_unpublished_seeds_of_varying_templates_and_stores_their_specs() -> None:
    first, second = reserve_subset(CATALOG, 3, 11, fresh=True), reserve_subset(CATALOG, 3, 11, fresh=True)
    assert first.instances == "fresh" and first.format == "computerops.subset/2"
    for task in first.tasks:
        parsed = parse_instance_id(task.id)
        assert parsed is not None and parsed[1] >= FRESH_SEED_FLOOR
        template = CATALOG.template_of(task.id)
        assert template is not None and template.varying and task.id not in list(CATALOG)
        assert task.spec == CATALOG[task.id].spec.model_dump(mode="json") and task.sha256 == CATALOG[task.id].sha256
    assert first.task_ids != second.task_ids  # seeds are drawn at reservation, not from the draw's seed
    assert [t.id for t in subset_tasks(first, CATALOG, Path("s.json"))] == first.task_ids


def test_a_subset_file_reserved_before_redraws_were_kept_still_reads_and_its_lock_still_holds(tmp_path: Path) -> None:
    subset = reserve_subset(CATALOG, 2, 11, fresh=True).model_copy(update={"undefined": []})
    written = subset.model_dump(mode="json", exclude={"undefined"})  # as such a file was written: no such key
    written["lock_sha256"] = canonical_sha256({k: v for k, v in written.items() if k != "lock_sha256"})
    (tmp_path / "old.json").write_text(json.dumps(written), encoding="utf-8")
    assert load_subset(tmp_path / "old.json").task_ids == subset.task_ids
    # A redraw added to (or dropped from) a file afterwards no longer matches its lock.
    edited = written | {"undefined": ["webmail.update-contact-phone@1000001"]}
    (tmp_path / "edited.json").write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(SubsetError, match="edited after it was reserved"):
        load_subset(tmp_path / "edited.json")


def test_a_regenerated_instance_that_differs_from_the_reserved_one_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    root = _catalog_with(tmp_path, "update-contact-phone")
    subset = reserve_subset(load_catalog(root), 2, 5, fresh=True)
    path = root / "webmail" / "update-contact-phone.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("Do not change anything else.",
                                                             "Change nothing else."), encoding="utf-8")
    with pytest.raises(SubsetError, match=r"differs in instruction: .*Do not change anything else.*recorded"):
        subset_tasks(subset, load_catalog(root), Path("s.json"))


def test_a_published_reservation_is_a_draw_anyone_can_redo() -> None:
    one, two = reserve_subset(CATALOG, 5, 3), reserve_subset(CATALOG, 5, 3)
    assert one.instances == "published" and one.task_ids == two.task_ids
    assert all(task_id in list(CATALOG) for task_id in one.task_ids)


# --- counts --------------------------------------------------------------------------------------------------------

def test_the_catalogs_counts_add_up_and_print_as_json() -> None:
    stats = catalog_stats(CATALOG, sorted(site_definitions()))
    assert stats.instances == len(CATALOG) and stats.templates == len(CATALOG.templates)
    for per in (stats.per_site, stats.per_family, stats.per_difficulty):
        assert sum(c.instances for c in per.values()) == stats.instances
        assert sum(c.templates for c in per.values()) == stats.templates
    assert stats.per_site["webmail"].instances - stats.per_site["webmail"].templates >= 14
    assert stats.sites == len(site_definitions())
    printed = json.loads(CliRunner().invoke(app, ["tasks", "stats", "--json"]).stdout)
    assert {"templates", "instances", "sites", "per_site", "per_family", "per_difficulty"} <= set(printed)
    assert printed["instances"] == stats.instances


def test_every_published_instance_records_its_difficulty_dimensions() -> None:
    for task in CATALOG.instances(PHONE):
        assert task.instance is not None and task.instance.difficulty is not None
        dims = task.instance.difficulty
        # fields: the contact list's search box (the contact is found by name among many) and the phone
        assert dims.steps == len(task.spec.scripted_control) and dims.pages == 3 and dims.fields == 2
        assert dims.distractors is not None and dims.distractors >= 0


# --- proof through the browser -------------------------------------------------------------------------------------

CI_SAMPLE = 4
"""Varying templates whose instances CI proves live (the slow tier's whole check proves every published instance)."""
CI_SAMPLE_SEED = 42


def ci_sample() -> list[LoadedTask]:
    """One published instance (never seed 1, which the corpus and the site samples already cover) of each of
    `CI_SAMPLE` varying templates drawn by `CI_SAMPLE_SEED`, and a fresh instance of the first."""
    varying = [t for t in CATALOG.templates.values() if t.varying]
    later = [CATALOG[f"{t.id}@{seed}"] for t in varying for seed in t.seeds[1:]]
    chosen = sample_instances(sample_instances(later, seed=CI_SAMPLE_SEED, per_template=1), seed=CI_SAMPLE_SEED,
                              count=CI_SAMPLE)
    return [*chosen, CATALOG[f"{chosen[0].template_id}@{FRESH_SEED_FLOOR + 424242}"]]


@pytest.mark.browser
@pytest.mark.timeout(1200)
async def test_a_seeded_sample_of_instances_a_fresh_one_among_them_prove_themselves(tmp_path: Path) -> None:
    tasks = ci_sample()
    assert len({t.template_id for t in tasks}) == min(CI_SAMPLE, sum(t.varying for t in CATALOG.templates.values()))
    checks = await check_tasks(tasks, tmp_path / "check", lambda _: None, concurrency=2)
    for check in checks:
        assert check.ok and check.solvable and check.noop_rejected, [r for r in check.results if not r.ok]
        assert check.negatives_rejected == check.negatives_total >= 1


def test_catalog_is_a_mapping_of_published_instances() -> None:
    assert isinstance(CATALOG, Catalog)
    assert len(CATALOG) == len(list(CATALOG)) == sum(len(t.seeds) for t in CATALOG.templates.values())
    assert all(parse_instance_id(task_id) is not None for task_id in CATALOG)


# --- samples -------------------------------------------------------------------------------------------------------

def test_a_sample_per_template_keeps_at_most_k_instances_of_each_the_same_for_the_same_seed() -> None:
    selected = select_tasks(CATALOG, f"{PHONE},{TWIN},webmail.add-contact-from-signature")
    one = sample_instances(selected, seed=4, per_template=2)
    assert one == sample_instances(selected, seed=4, per_template=2)
    by_template = {t.template_id for t in one}
    assert by_template == {PHONE, TWIN, "webmail.add-contact-from-signature"}
    assert all(sum(t.template_id == template for t in one) == min(2, len(CATALOG.templates[template].seeds))
               for template in by_template)
    assert [t.id for t in one] == [t.id for t in selected if t in one]  # the selection's order
    assert len(sample_instances(selected, seed=4, count=3)) == 3
    assert sample_instances(selected, seed=4) == selected


def test_the_check_commands_sample_by_the_seed_they_are_given() -> None:
    seeds = {seed: {t.id for t in sample_instances(CATALOG.instances(PHONE), seed=seed, count=3)}
             for seed in range(6)}
    assert len({frozenset(found) for found in seeds.values()}) > 1  # the seed decides
    assert all(len(found) == 3 for found in seeds.values())


def test_the_instance_bench_times_published_instances_and_fresh_seeds_beside_the_reset(tmp_path: Path) -> None:
    # Seeded: the fresh seeds run from 836009628, at which invoices.rename-vendor-open-records defines no instance
    # (no vendor of that seed has exactly three records of open invoices): the bench takes the next seed, as a
    # reservation does, and counts it.
    undefined = CATALOG.templates["invoices.rename-vendor-open-records"]
    with pytest.raises(InstanceUndefined):
        undefined.instance(836009628)
    # The first varying template of each site and that one: the bench's code over every site, at a twentieth of the
    # whole catalog's time (each fresh seed seeds its site's data anew: most of what a fresh instance costs).
    chosen: dict[str, Any] = {}
    for template in CATALOG.templates.values():
        if template.varying and template.site != undefined.site:
            chosen.setdefault(template.site, template)
    catalog = Catalog({t.id: t for t in [*chosen.values(), undefined]})
    varying = list(catalog.templates.values())
    first = 836009628 - [t.id for t in varying].index(undefined.id)  # that template draws exactly that seed
    # One published instance a template (the bench's default is three).
    figures = bench_instances(catalog, tmp_path, fresh_seeds=1, per_template=1, first_fresh_seed=first)
    assert figures.templates == len(varying)
    assert figures.published_instance_ms.n == sum(min(1, len(t.seeds)) for t in varying)
    assert figures.fresh_instance_ms.n == len(varying) and figures.reset_ms.n > 0
    assert figures.fresh_undefined >= 1
    assert figures.fresh_to_reset == round(figures.fresh_instance_ms.median / figures.reset_ms.median, 1)


def _fresh_generation(seeds: Iterable[int]) -> tuple[dict[str, int], dict[str, str]]:
    """Every varying template at every seed of `seeds` (each from no cache): how many seeds each defined no instance
    at, and the first other error of each template that failed otherwise."""
    undefined: dict[str, int] = {}
    failed: dict[str, str] = {}
    for seed in seeds:
        for template in CATALOG.templates.values():
            if not template.varying or template.id in failed:
                continue
            try:
                dataclasses.replace(template, _cache={}).instance(seed)
            except InstanceUndefined:
                undefined[template.id] = undefined.get(template.id, 0) + 1
            except TaskFileError as exc:
                failed[template.id] = f"@{seed}: {exc}"
    return undefined, failed


FRESH_PROBE = 104_729
"""The stride between the fresh seeds the generation tests probe (a prime: consecutive seeds are not neighbours)."""


ONCE_FAILED = (2_675_677, 10_844_539)
"""Fresh seeds at which inventory.update-reorder-point's generator failed (a product priced 9.99, whose digits its
control swapped) until `digits_swapped` was made total."""


def _probed(count: int) -> range:
    return range(FRESH_SEED_FLOOR + 13, FRESH_SEED_FLOOR + 13 + FRESH_PROBE * count, FRESH_PROBE)


def test_every_varying_template_generates_or_is_undefined_at_a_sample_of_fresh_seeds() -> None:
    """A fresh reservation regenerates a template at a seed nobody chose: the generator either yields an instance or
    says the seed's data hold no record its story needs (`InstanceUndefined`, redrawn); any other failure (a filter
    that fails on a value the data can hold, such as `9.99|digits_swapped` before it was made total) makes the
    reservation fail. Five seeds here and those at which a generator once failed; the slow tier probes 300."""
    seeds = [*_probed(5), *ONCE_FAILED]
    undefined, failed = _fresh_generation(seeds)
    assert not failed, failed
    assert sum(undefined.values()) <= len(seeds) * len(CATALOG.templates) // 20, undefined


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_every_varying_template_generates_at_nearly_every_one_of_300_fresh_seeds() -> None:
    # Measured at 4245a6c: one template failed at 2 of 300 seeds (ONCE_FAILED), 11 were undefined at 1 to 4 of the
    # 300 each (22 in all).
    undefined, failed = _fresh_generation(_probed(300))
    assert not failed, failed
    assert all(count <= 300 // 20 for count in undefined.values()), undefined  # a reservation redraws up to 20 times


# --- experiments over templates ------------------------------------------------------------------------------------

def _row(task_id: str, arm: str, verified: bool) -> ExperimentEpisode:
    return ExperimentEpisode(
        episode_id=f"{task_id}-{arm}", task_id=task_id, cell="c", arm=arm, repetition=1, pair=task_id,  # type: ignore[arg-type]
        model="scripted:oracle", tools=None, order=None, fault_rate=0.0, seed=None,
        outcome="verified_success" if verified else "honest_failure", claimed_success=verified,
        false_completion_kind=None, steps=1, faults_configured=(), faults_fired=())


def test_the_paired_bootstrap_resamples_templates_not_their_instances() -> None:
    # Template a: three instances, each +1; template b: one instance, 0. Weighting instances would give 0.75.
    rows = [r for seed in (1, 2, 3) for r in (_row(f"t.a@{seed}", "treatment", True), _row(f"t.a@{seed}", "control",
                                                                                             False))]
    rows += [_row("t.b@1", "treatment", True), _row("t.b@1", "control", True)]
    estimate = paired_estimate(rows, "verified_success", resamples=200, seed=1)
    assert estimate.n_tasks == 4 and estimate.n_templates == 2
    assert estimate.mean == pytest.approx(0.5)
    assert estimate.interval is not None and estimate.interval[0] >= 0.0 and estimate.interval[1] <= 1.0


def test_a_design_names_a_template_with_a_number_of_instances(tmp_path: Path) -> None:
    entries = [ExperimentTask(id=PHONE, instances=3), ExperimentTask(id="webmail.add-contact-from-signature@1")]
    expanded = _expanded(entries, CATALOG, tmp_path / "e.yaml")
    assert [e.id for e in expanded] == [f"{PHONE}@1", f"{PHONE}@2", f"{PHONE}@3",
                                        "webmail.add-contact-from-signature@1"]
    count = len(CATALOG.templates[PHONE].seeds)
    with pytest.raises(ExperimentRefused, match=f"publishes {count} instances, {count + 1} asked for"):
        _expanded([ExperimentTask(id=PHONE, instances=count + 1)], CATALOG, tmp_path / "e.yaml")
    with pytest.raises(ExperimentRefused, match="named twice"):
        _expanded([ExperimentTask(id=PHONE, instances=2), ExperimentTask(id=f"{PHONE}@2")], CATALOG,
                  tmp_path / "e.yaml")
    with pytest.raises(ExperimentRefused, match="not a template"):
        _expanded([ExperimentTask(id="webmail.nope", instances=2)], CATALOG, tmp_path / "e.yaml")


def test_a_run_keeps_its_instances_so_a_regenerated_one_that_differs_is_named_by_field(tmp_path: Path) -> None:
    fresh = CATALOG[f"{PHONE}@{FRESH_SEED_FLOOR + 77}"]
    (tmp_path / INSTANCES_FILE).write_text(instances_text([fresh]), encoding="utf-8")
    assert changed_field(tmp_path, fresh) is None
    edited = LoadedTask(spec=fresh.spec.model_copy(update={"instruction": "Something else."}), path=fresh.path,
                        sha256="0" * 64, instance=fresh.instance)
    found = changed_field(tmp_path, edited)
    assert found is not None and found.startswith("instruction: ") and "Something else." in found
    other = CATALOG[f"{PHONE}@1"]
    assert changed_field(tmp_path, other) is None  # not an instance of that run: nothing to name
    assert changed_field(tmp_path / "nowhere", fresh) is None  # a run made before the file


def test_a_runs_outcomes_group_by_its_instances_difficulty_and_template() -> None:
    tasks = [CATALOG[f"{PHONE}@1"], CATALOG[f"{PHONE}@2"], CATALOG["webmail.fault-false-success-update-phone@1"]]
    instances = RunInstances.model_validate_json(instances_text(tasks))
    # Grouping reads a record's task id and outcome alone: records built with those two fields (not validated).
    fields: list[dict[str, Any]] = [{"task_id": t.id, "outcome": outcome} for t in tasks
                                    for outcome in ("verified_success", "false_completion", "infrastructure_failure")]
    records = [EpisodeRecord.model_construct(**found) for found in fields]
    by_steps = grouped_outcomes(records, instances, "steps")
    assert [(r.value, r.instances, r.verified.numerator, r.verified.denominator) for r in by_steps.rows] == [
        ("7", 2, 2, 4), ("13", 1, 1, 2)]  # infrastructure failures are outside every rate
    by_template = grouped_outcomes(records, instances, "template")
    assert {r.value: r.instances for r in by_template.rows} == {PHONE: 2, "webmail.fault-false-success-update-phone": 1}
    assert all(r.false_completions.numerator == r.instances for r in by_template.rows)
    unknown = grouped_outcomes(records, instances.model_copy(update={"difficulty": {}}), "distractors")
    assert [r.value for r in unknown.rows] == ["unknown"]


def test_a_run_recorded_before_instance_ids_finds_its_fixed_task_by_its_bare_id(tmp_path: Path) -> None:
    # A fixed task file (no template block): solve-ticket's first instance written out as one, as the file was
    # before it became a template.
    drawn = CATALOG["helpdesk.solve-ticket@1"].spec.model_dump(mode="json", exclude_none=True)
    root = tmp_path / "catalog" / "helpdesk"
    root.mkdir(parents=True)
    (root / "solve-ticket.yaml").write_text(yaml.safe_dump({**drawn, "id": "helpdesk.solve-ticket"}), encoding="utf-8")
    catalog = load_catalog(tmp_path / "catalog")
    fixed = catalog.templates["helpdesk.solve-ticket"]
    assert fixed.block is None
    old = catalog["helpdesk.solve-ticket"]
    assert old.id == "helpdesk.solve-ticket" and old.sha256 == fixed.sha256  # as runs before instances recorded it
    assert "helpdesk.solve-ticket" in catalog and "helpdesk.solve-ticket" not in list(catalog)
    assert old.spec.model_copy(update={"id": "helpdesk.solve-ticket@1"}) == catalog["helpdesk.solve-ticket@1"].spec
    assert PHONE not in CATALOG and CATALOG.get(PHONE) is None  # a varying template has no bare instance
    assert "helpdesk.solve-ticket" not in CATALOG  # nor does the template solve-ticket became


# --- the row functions' index and the catalog's cache ------------------------------------------------------------

_CELL = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["a", "b", "1"]), st.booleans(),
                  st.sampled_from([1.0, 0.0]), st.lists(st.integers(0, 1), max_size=1))


@settings(max_examples=examples(400), deadline=None)
@given(table=st.lists(st.fixed_dictionaries({"id": st.integers(0, 50)}, optional={"x": _CELL, "y": _CELL}),
                      max_size=12),
       asks=st.lists(st.dictionaries(st.sampled_from(["x", "y", "id"]), _CELL, max_size=2), min_size=1, max_size=4))
def test_the_row_functions_index_finds_what_a_scan_of_the_rows_finds(table: list[dict[str, Any]],
                                                                     asks: list[dict[str, Any]]) -> None:
    """`rows/count/one` answer from an index per set of columns: the same rows, in the same order, as comparing each
    row with `==` — unhashable values (a list in a row or in the question) and asks repeated on one index included."""
    functions = _row_functions(MappingProxyType({"t": tuple(table)}))
    for where in asks:
        scanned = [dict(row) for row in table if all(row.get(k) == v for k, v in where.items())]
        assert functions["rows"]("t", **where) == scanned
        assert functions["count"]("t", **where) == len(scanned)



_FILTERS = ["it.x == 1", "it.x", "not it.y", "it.x is none or it.y == k", "it.id > k and it.id is even",
            "count('t', x=it.x) > 1", "it.x in [1, 'a']", "(it.x ~ '') | length == 1", "it.x + 1 > 0",
            "it.x > k", "missing_name", "it.id == loop", "it.id < (k if k is number else 0)",
            "'%}' in (it.x | string)", "it.x == k % 2"]
"""Filters as authors write them, ones that raise on some rows (a type error, an undefined name), and ones that
cannot run as one loop (naming `loop`, holding a delimiter in a string)."""


def _per_row(test: str, context: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
    from tasks.templates import _expression
    try:
        return [row for row in rows if _expression(test)(**context, it=row)]
    except Exception as exc:  # the class is what is compared
        return type(exc)


@settings(max_examples=examples(400), deadline=None)
@given(table=st.lists(st.fixed_dictionaries({"id": st.integers(0, 5)}, optional={"x": _CELL, "y": _CELL}),
                      max_size=12),
       test=st.sampled_from(_FILTERS), k=_CELL, loop=st.one_of(_CELL, st.integers(0, 5)))
def test_a_filter_keeps_the_rows_and_raises_the_errors_its_expression_does_row_by_row(
        table: list[dict[str, Any]], test: str, k: Any, loop: Any) -> None:
    """`_filtered` renders one loop over the candidates: the same rows in the same order, and the same error class,
    as calling the filter's expression on each row (the row functions and earlier parameters in its context)."""
    from tasks.templates import _filtered
    context: dict[str, Any] = {"k": k, "loop": loop, **_row_functions(MappingProxyType({"t": tuple(table)}))}
    expected = _per_row(test, context, table)
    try:
        got: Any = _filtered(test, context, table)
    except Exception as exc:
        got = type(exc)
    assert got == expected


def test_the_catalog_is_loaded_once_per_content_and_anew_when_a_file_changes(tmp_path: Path) -> None:
    root = _catalog_with(tmp_path, "update-contact-phone")
    first = load_catalog(root)
    assert load_catalog(root) is first  # the same bytes: the catalog already built, its instances with it
    path = root / "webmail" / "update-contact-phone.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("version: ", "version: 1", 1), encoding="utf-8")
    changed = load_catalog(root)
    assert changed is not first
    assert changed.templates[PHONE].data["version"] == 14 != first.templates[PHONE].data["version"]
    path.rename(root / "webmail" / "renamed.yaml")  # the same bytes under another name: another catalog
    assert load_catalog(root) is not changed


def test_the_repositorys_catalog_outlasts_the_catalogs_of_other_folders(tmp_path: Path) -> None:
    """The catalog of tasks/ keeps the instances it generated (the whole catalog's take tens of seconds) however
    many other folders' catalogs are loaded after it (tests, authors' drafts: an LRU of their own)."""
    first = load_catalog()
    for n in range(10):
        load_catalog(_catalog_with(tmp_path / str(n), "update-contact-phone"))
    assert load_catalog() is first
