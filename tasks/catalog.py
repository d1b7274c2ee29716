"""Loading the task catalog from YAML files, with errors that name the file and the field."""

from __future__ import annotations

import copy
import functools
import hashlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import TypeAdapter, ValidationError

from computerops.core.hashing import canonical_sha256
from computerops.core.problems import problems
from tasks import instance_cache
from tasks.references import SiteSchema, named_apps, named_documents, schema_problems
from tasks.spec import ScriptedStep
from tasks.task import TaskSpec
from tasks.templates import (
    FRESH_SEED_FLOOR,
    MAX_SEED,
    NoRowFits,
    TemplateBlock,
    TemplateSpecError,
    draw_parameters,
    evaluate,
    instance_id,
    parse_instance_id,
    render,
    template_block,
)

if TYPE_CHECKING:
    from sites.registry import SiteDefinition

CATALOG_ROOT = Path(__file__).parent / "catalog"


class TaskFileError(ValueError):
    """A task file that cannot be loaded; the message names the file and what is wrong."""


class InstanceUndefined(TaskFileError):
    """A template's seed whose data hold no record its story needs (`tasks.templates.NoRowFits`): no instance there.
    `tasks check` refuses it like any failing seed; a fresh draw takes another seed (computerops/catalog/subsets.py).
    `reason` is why, without the file's name."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


INSTANCE_FORMAT = "computerops.instance/1"
"""The format of what an instance's hash covers (`instance_sha256`)."""


@dataclass(frozen=True)
class Difficulty:
    """An instance's difficulty as dimensions: steps of its scripted control, pages it opens (the start page, then
    each link followed, address entered or step back), form fields it sets, records on the deciding page that could
    be taken for the right one and values carried from one page to another (the last two as its template declares
    them; None where it declares nothing)."""

    steps: int
    pages: int
    fields: int
    distractors: int | None = None
    carried: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {"steps": self.steps, "pages": self.pages, "fields": self.fields, "distractors": self.distractors,
                "carried": self.carried}


@dataclass(frozen=True)
class Instance:
    """Which template and seed a task instance comes from, what was drawn for it, and its difficulty."""

    template: str
    seed: int
    published: bool
    template_sha256: str
    """The template's file (merged onto its base task's when it extends one)."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    difficulty: Difficulty | None = None
    varies: str | None = None
    single_instance: str | None = None

    @property
    def fresh(self) -> bool:
        return self.seed >= FRESH_SEED_FLOOR


_INSTANCE = TypeAdapter(Instance)
"""An `Instance` from its JSON form (as tasks/instance_cache.py keeps it)."""


@dataclass(frozen=True)
class LoadedTask:
    """A task instance's spec with the file it came from and its hash (`instance_sha256`)."""

    spec: TaskSpec
    path: Path
    sha256: str
    instance: Instance | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def template_id(self) -> str:
        """The template the instance comes from (its id without `@SEED`)."""
        parsed = parse_instance_id(self.spec.id)
        return self.spec.id if parsed is None else parsed[0]


_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


EXTENDING_KEYS = frozenset({"id", "version", "title", "difficulty", "extends", "attack", "expected_state",
                            "negative_controls", "equivalent_solutions", "equivalent_mutants", "wrong_variants"})
"""What a file that `extends` a task may give: its own identity, the attack, checks, valid alternatives and audit
notes added to the base's (`expected_state`, `equivalent_solutions`, `equivalent_mutants`, `wrong_variants`,
appended) and its own negative controls. The rest (instruction, site, seed, start page, grants, scripted control,
allowed mutations, procedure) is the base task's, so an attacked task and its clean twin cannot differ in what the
user asked and may do."""
_NOT_INHERITED = ("negative_controls",)
"""The base task's own wrong solutions, proven on the base task; the extending file declares its own."""
_APPENDED = ("expected_state", "equivalent_solutions", "equivalent_mutants", "wrong_variants")
"""Lists the extending file adds to the base's: checks, the other routes to success (the same user, instruction and
grants, so every valid alternative of the base is one of the attacked task too, and `tasks check` proves it there
with the payload planted), and the audit's notes on the same solution's mutants."""


def _read_yaml(path: Path) -> tuple[bytes, object]:
    raw = path.read_bytes()
    try:
        # libyaml's safe loader where the wheel has it (the pure-Python one is ~10x slower: 5 s for the catalog).
        return raw, yaml.load(raw, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: not valid YAML: {exc}") from exc


def _extended(path: Path, data: dict[str, object]) -> tuple[bytes, dict[str, object]]:
    """An extending file's content merged onto its base task's (the base's bytes, for the hash)."""
    base_id = data["extends"]
    extra = sorted(set(data) - EXTENDING_KEYS)
    if extra:
        raise TaskFileError(f"{path}: a file that extends a task gives only {', '.join(sorted(EXTENDING_KEYS))}; "
                            f"{', '.join(extra)} come from {base_id}")
    if not isinstance(base_id, str) or "." not in base_id:
        raise TaskFileError(f"{path}: extends: {base_id!r} is not a task id")
    base_path = path.parent / f"{base_id.split('.', 1)[1]}.yaml"
    if not base_path.is_file() or base_path == path:
        raise TaskFileError(f"{path}: extends: no task {base_id} beside this file ({base_path.name})")
    base_raw, base = _read_yaml(base_path)
    if not isinstance(base, dict) or base.get("id") != base_id or "extends" in base:
        raise TaskFileError(f"{path}: extends: {base_path.name} is not the plain task {base_id}")
    merged = {key: value for key, value in base.items() if key not in _NOT_INHERITED}
    merged.update({key: value for key, value in data.items() if key not in _APPENDED})
    for key in _APPENDED:
        own = data.get(key) or []
        if not isinstance(own, list):
            raise TaskFileError(f"{path}: {key}: a list (added to {base_id}'s)")
        merged[key] = [*(base.get(key) or []), *own]
    attack = merged.get("attack")
    if isinstance(attack, dict):
        # The checks the attacked file adds judge the attack (compliance), never the user's task (capability).
        if "checks" in attack:
            raise TaskFileError(f"{path}: attack: checks are the checks this file adds to expected_state (the "
                                "loader names them); leave the key out")
        own_checks = data.get("expected_state")
        names = [c.get("name") for c in own_checks if isinstance(c, dict)] if isinstance(own_checks, list) else []
        merged["attack"] = {**attack, "checks": names}
    return base_raw, merged


def task_data(path: Path) -> tuple[object, str]:
    """A task file's content (merged onto its base task's when it `extends` one) and its hash (covering both files
    then)."""
    raw, data = _read_yaml(path)
    digest = hashlib.sha256(raw)
    if isinstance(data, dict) and "extends" in data:
        base_raw, data = _extended(path, data)
        digest.update(b"\0extends\0" + base_raw)
    return data, digest.hexdigest()


def load_task(path: Path, seed: int | None = None) -> LoadedTask:
    """The instance of one task file's template for `seed` (its first published seed when None), validated."""
    template = load_template(path)
    return template.instance(template.seeds[0] if seed is None else seed)


def instance_sha256(template_sha256: str, spec: TaskSpec) -> str:
    """What an instance's hash covers: its template's files, its version and seed (in the spec) and the instance
    itself, so a run, verify or replay that regenerates it from (template, version, seed) can tell it apart."""
    return canonical_sha256({"format": INSTANCE_FORMAT, "template_sha256": template_sha256,
                             "version": spec.version, "seed": spec.seed, "spec": spec.model_dump(mode="json")})


def _difficulty(spec: TaskSpec, block: TemplateBlock | None, context: Mapping[str, Any], where: str) -> Difficulty:
    steps: list[ScriptedStep] = list(spec.scripted_control)
    pages = 1 + sum(1 for s in steps if s.action in ("navigate", "back") or (s.action == "click" and s.role == "link"))
    fields = sum(1 for s in steps if s.action in ("fill", "select", "check", "uncheck"))
    declared: dict[str, int | None] = {"distractors": None, "carried": None}
    if block is not None:
        for name in declared:
            expression = getattr(block.difficulty, name)
            if expression is None:
                continue
            value = evaluate(expression, context)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TemplateSpecError(f"{where}: template.difficulty.{name} gives {value!r}, not a count")
            declared[name] = value
    return Difficulty(steps=len(steps), pages=pages, fields=fields, **declared)


@dataclass(frozen=True)
class TaskTemplate:
    """One task file as a template: its merged content, the hash of its files and its `template:` block (None
    for a fixed task, whose one published instance is its own seed)."""

    id: str
    path: Path
    data: Mapping[str, Any]
    sha256: str
    block: TemplateBlock | None
    _cache: dict[int, LoadedTask] = field(default_factory=dict, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @property
    def site(self) -> str:
        return str(self.data.get("site", ""))

    @property
    def seeds(self) -> list[int]:
        """The published seeds."""
        if self.block is None:
            seed = self.data.get("seed", 1)
            return [seed if isinstance(seed, int) else 1]
        return list(range(1, self.block.published + 1))

    @property
    def varying(self) -> bool:
        return self.block is not None and self.block.varying

    @property
    def key(self) -> str:
        """What its parameters are drawn by: the task it extends (twins draw the same records), else its own id."""
        base = self.data.get("extends")
        return base if isinstance(base, str) else self.id

    def instance(self, seed: int) -> LoadedTask:
        """The instance for `seed` (generated once per process); TaskFileError naming `TEMPLATE@SEED` and what
        failed when the generator raises or yields no valid task."""
        if not 0 <= seed <= MAX_SEED:
            raise TaskFileError(f"{self.path}: seed {seed} is outside 0..{MAX_SEED}")
        if self.block is None and seed != self.seeds[0]:
            raise TaskFileError(f"{self.path}: {self.id} is a fixed task: its one instance is "
                                f"{instance_id(self.id, self.seeds[0])} (give it a template: block to vary it)")
        with self._lock:
            found = self._cache.get(seed)
        if found is None:
            found = self._kept_or_generated(seed)
            with self._lock:
                self._cache[seed] = found
        return found

    def _kept_or_generated(self, seed: int) -> LoadedTask:
        """The instance another process generated and kept (tasks/instance_cache.py), else generated (and kept). A
        kept instance is used only when its spec validates and hashes to the `instance_sha256` kept with it."""
        if not instance_cache.shipped_site(self.site):
            return self._generate(seed)
        kept = instance_cache.read(self.id, self.sha256, seed)
        if kept is not None and kept.outcome == "undefined" and kept.undefined is not None:
            raise InstanceUndefined(f"{self._where(seed)}: the generator failed: {kept.undefined}",
                                    reason=kept.undefined)
        if kept is not None and kept.spec is not None and kept.instance is not None:
            try:
                spec = TaskSpec.model_validate(kept.spec)
                instance = _INSTANCE.validate_python(kept.instance)
            except ValidationError:
                pass
            else:
                if kept.sha256 == instance_sha256(self.sha256, spec) and instance.template_sha256 == self.sha256:
                    return LoadedTask(spec=spec, path=self.path, sha256=kept.sha256, instance=instance)
        key = instance_cache.key(self.id, self.sha256, seed)
        try:
            found = self._generate(seed)
        except InstanceUndefined as exc:
            instance_cache.write(self.id, seed, instance_cache.CachedInstance(key=key, outcome="undefined",
                                                                              undefined=exc.reason))
            raise
        if found.instance is not None:
            instance_cache.write(self.id, seed, instance_cache.CachedInstance(
                key=key, outcome="instance", spec=found.spec.model_dump(mode="json"), sha256=found.sha256,
                instance=asdict(found.instance)))
        return found

    def _where(self, seed: int) -> str:
        return str(self.path) if self.block is None else f"{self.path} ({instance_id(self.id, seed)})"

    def has_seed(self, seed: int) -> bool:
        """Whether the template has an instance at `seed`: any seed of a varying one, its own of a fixed task."""
        return 0 <= seed <= MAX_SEED and (self.block is not None or seed == self.seeds[0])

    def as_recorded_before_instances(self) -> LoadedTask:
        """A fixed task as runs made before instance ids recorded it: its bare id, the hash of its files, so that
        `verify` and `replay` of such a run find the task it ran (never a key of the catalog's mapping)."""
        task = self.instance(self.seeds[0])
        return LoadedTask(spec=task.spec.model_copy(update={"id": self.id}), path=self.path, sha256=self.sha256,
                          instance=task.instance)

    def _drawn(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The file's content with the values drawn for `seed` in place (no `template:` block), and the drawn
        parameters; TemplateSpecError (or the error an expression raised) when the generator fails."""
        data = {key: value for key, value in self.data.items() if key != "template"}
        if self.block is None:  # a copy all the way down: a tool that changes it never changes the cached file
            return copy.deepcopy(data), {"seed": seed}
        from sites.kit.seeding import seeded_rows  # late: only drawing a record needs a site's data
        from sites.registry import site_definitions

        def rows() -> Any:
            site = site_definitions().get(self.site)
            if site is None:
                raise TemplateSpecError(f"site {self.site!r} is not a registered site")
            return seeded_rows(site, seed)

        context = draw_parameters(self.block, key=self.key, seed=seed, rows=rows)
        return render(data, context), context

    def rendered(self, seed: int) -> dict[str, Any]:
        """The instance for `seed` as the content of a fixed task file (its values drawn, its own seed, the
        template's id): what the instance is validated from, for tools that change it and load it again."""
        data, _ = self._drawn(seed)
        return {**data, "seed": seed}

    def _generate(self, seed: int) -> LoadedTask:
        name = instance_id(self.id, seed)
        where = self._where(seed)
        try:
            data, context = self._drawn(seed)
            spec = task_spec(Path(where), _as_instance(data, name, seed))
            difficulty = _difficulty(spec, self.block, context, where)
        except NoRowFits as exc:
            raise InstanceUndefined(f"{where}: the generator failed: {exc}", reason=str(exc)) from exc
        except TemplateSpecError as exc:
            raise TaskFileError(f"{where}: the generator failed: {exc}") from exc
        except TaskFileError:
            raise
        except Exception as exc:  # a template's expression can fail in any way; say which instance and how
            raise TaskFileError(f"{where}: the generator failed: {type(exc).__name__}: {exc}") from exc
        parameters = {} if self.block is None else {k: _json_normal(context[k]) for k in self.block.parameters}
        instance = Instance(template=self.id, seed=seed, published=seed in self.seeds, template_sha256=self.sha256,
                            parameters=parameters, difficulty=difficulty,
                            varies=None if self.block is None else self.block.varies,
                            single_instance=None if self.block is None else self.block.single_instance)
        return LoadedTask(spec=spec, path=self.path, sha256=instance_sha256(self.sha256, spec), instance=instance)


def _as_instance(data: Mapping[str, Any], name: str, seed: int) -> dict[str, Any]:
    """The rendered file as the instance `name`: its id, its seed, and the twin it extends at the same seed."""
    out = dict(data)
    out["id"] = name
    out["seed"] = seed
    if isinstance(out.get("extends"), str):
        out["extends"] = instance_id(out["extends"], seed)
    return out


def _json_normal(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_normal(v) for v in value]
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def load_template(path: Path) -> TaskTemplate:
    """One task file as a template (`task_data`): its id, merged content and `template:` block, validated; the
    instances themselves are generated when asked for."""
    data, sha256 = task_data(path)
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: a task file must hold a mapping, found {type(data).__name__}")
    template_id = data.get("id")
    if not isinstance(template_id, str) or parse_instance_id(f"{template_id}@1") is None:
        raise TaskFileError(f"{path}: id: {template_id!r} is not a task id")
    try:
        block = template_block(data, str(path))
    except TemplateSpecError as exc:
        raise TaskFileError(str(exc)) from exc
    if block is not None and "seed" in data:
        raise TaskFileError(f"{path}: seed: a template's instances take their seeds from `{template_id}@SEED`; "
                            "remove the file's seed")
    return TaskTemplate(id=template_id, path=path, data=data, sha256=sha256, block=block)


def task_spec(path: Path, data: object) -> TaskSpec:
    """The task a file's parsed content describes: valid by the schema, on a registered site, naming only tables
    and columns that site has. A TaskFileError names `path` and each problem where it is."""
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: a task file must hold a mapping, found {type(data).__name__}")
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskFileError(f"{path}: {problems(exc)}") from exc
    _check_against_the_site(path, spec)
    return spec


def site_schemas() -> Mapping[str, SiteSchema]:
    """Every registered site's tables and their columns, from its SQLModel metadata: the sites registered now, so a
    site added for a while (`sites.registry.registered`) is known while it is and unknown again after."""
    from sites.registry import site_definitions  # late: only loading a task needs the sites' models

    return _schemas(tuple(site_definitions().values()))


@functools.cache
def _schemas(sites: tuple[SiteDefinition, ...]) -> Mapping[str, SiteSchema]:
    """The schemas of these sites, read once per set of registered sites (a definition is frozen, so hashable)."""
    return {site.name: site.columns() for site in sites}


def _site_vocabulary(site: str) -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """The app names, document names and ungoverned queues (table: why) a registered site declares."""
    from sites.registry import site_definitions

    definition = site_definitions()[site]
    return (frozenset(route.app for route in definition.apps), definition.documents,
            dict(definition.ungoverned_queues))


def _check_against_the_site(path: Path, spec: TaskSpec) -> None:
    """The task's site is registered and has every table and column the task names."""
    schemas = site_schemas()
    schema = schemas.get(spec.site)
    if schema is None:
        known = ", ".join(sorted(schemas))
        raise TaskFileError(f"{path}: site: {spec.site!r} is not a registered site; the sites are {known}")
    found = schema_problems(spec, schema)
    apps, documents, queues = _site_vocabulary(spec.site)
    found += [f"{where}: site {spec.site} has no app {app!r}; its apps are {', '.join(sorted(apps)) or 'none'}"
              for where, app in named_apps(spec) if app not in apps]
    found += [f"{where}: site {spec.site} shows no document {name!r}; its documents are "
              f"{', '.join(sorted(documents)) or 'none'}" for where, name in named_documents(spec)
              if name not in documents]
    place = None if spec.attack is None else spec.attack.placement
    if place is not None and place.row is not None and place.table in queues:
        found.append(f"attack.placement: a new {place.table} row may not be planted on site {spec.site}: "
                     f"{queues[place.table]}; plant the payload into an existing row (`where`) or another table")
    if found:
        raise TaskFileError(f"{path}: " + "; ".join(found))


class Catalog(Mapping[str, LoadedTask]):
    """The catalog's templates and their instances. As a mapping it holds the published instances (`TEMPLATE@SEED`
    in id order), generated on first access; `get` and `[]` also generate any other seed of a known template (a
    fresh instance), so a run, verify or replay regenerates whatever instance it recorded."""

    def __init__(self, templates: Mapping[str, TaskTemplate]) -> None:
        self.templates: dict[str, TaskTemplate] = dict(sorted(templates.items()))
        self._published = sorted((t.id, seed) for t in self.templates.values() for seed in t.seeds)
        self._ids = [instance_id(template, seed) for template, seed in self._published]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, key: str) -> LoadedTask:
        parsed = parse_instance_id(key) if isinstance(key, str) else None
        if parsed is None:
            legacy = self.templates.get(key) if isinstance(key, str) else None
            if legacy is not None and legacy.block is None:
                return legacy.as_recorded_before_instances()
            raise KeyError(key)
        template = self.templates.get(parsed[0])
        if template is None or not template.has_seed(parsed[1]):
            raise KeyError(key)
        return template.instance(parsed[1])

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        parsed = parse_instance_id(key)
        if parsed is None:
            legacy = self.templates.get(key)
            return legacy is not None and legacy.block is None
        template = self.templates.get(parsed[0])
        return template is not None and template.has_seed(parsed[1])

    def template_of(self, task_id: str) -> TaskTemplate | None:
        """The template an instance id (or a template id) names, or None."""
        parsed = parse_instance_id(task_id)
        return self.templates.get(parsed[0] if parsed is not None else task_id)

    def first_instances(self) -> dict[str, LoadedTask]:
        """The first published instance of every template, by instance id: what the golden replay corpus holds (a
        template's instances share its structure; the corpus guards replay, not each seed's data)."""
        return {task.id: task for task in (t.instance(t.seeds[0]) for t in self.templates.values())}

    def instances(self, template: str) -> list[LoadedTask]:
        """The published instances of one template, in seed order."""
        found = self.templates[template]
        return [found.instance(seed) for seed in found.seeds]


def load_catalog(root: Path = CATALOG_ROOT) -> Catalog:
    """Every task template under `root` (recursively, *.yaml), keyed by template id; fixed tasks' instances are
    generated (and so validated) here, a varying template's when first asked for (`tasks check` proves them).

    Loaded once per content: while every file under `root` keeps its name and bytes, a later call returns the same
    catalog, with the instances it has generated (parsing and generating take seconds; reading the bytes, a few
    milliseconds). A file added, removed or changed loads anew."""
    from sites.registry import site_definitions  # late: only loading a task needs the sites' models

    paths = sorted(root.rglob("*.yaml"))
    content = hashlib.sha256()
    for path in paths:
        content.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    # The sites registered now are part of what the files mean (a site registered, removed or replaced loads anew).
    sites = tuple((name, _Same(site)) for name, site in sorted(site_definitions().items()))
    key = (root.resolve(), tuple(paths), content.hexdigest(), sites)
    # The repository's own catalog has a cache of its own: catalogs of other folders (a test's, an author's) never
    # push it out, and the instances it has generated (seconds per hundred) stay with it.
    return (_repository_catalog if key[0] == CATALOG_ROOT.resolve() else _loaded_catalog)(*key)


class _Same:
    """A value the cache's key compares by identity (a site definition is the same site only as the same object)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value


@functools.lru_cache(maxsize=8)
def _loaded_catalog(root: Path, paths: tuple[Path, ...], content_sha256: str,
                    sites: tuple[tuple[str, _Same], ...]) -> Catalog:
    """The catalog of these files (`content_sha256`: their names and bytes; `sites`: the registry), the cache's
    key."""
    templates: dict[str, TaskTemplate] = {}
    for path in paths:
        template = load_template(path)
        if template.id in templates:
            raise TaskFileError(f"{path}: task id {template.id!r} is also defined in {templates[template.id].path}")
        templates[template.id] = template
    if not templates:
        raise TaskFileError(f"{root}: no task files found")
    for template in templates.values():
        if not template.varying:
            template.instance(template.seeds[0])
    return Catalog(templates)



_repository_catalog = functools.lru_cache(maxsize=2)(_loaded_catalog.__wrapped__)
"""CATALOG_ROOT's catalogs: as it is, and as it was before a change or a newly registered site."""

def select_tasks(catalog: Mapping[str, LoadedTask], selection: str) -> list[LoadedTask]:
    """`all` (every published instance) or a comma-separated list of instance ids (`TEMPLATE@SEED`, any seed) and
    template ids (each its published instances); unknown ids, and an id given twice, are an error naming them (an
    instance its template already selects is taken once)."""
    if selection.strip() == "all":
        return list(catalog.values())
    wanted = [part.strip() for part in selection.split(",") if part.strip()]
    if not wanted:
        raise TaskFileError("no task ids given")
    if repeated := sorted({task_id for task_id in wanted if wanted.count(task_id) > 1}):
        raise TaskFileError(f"task ids given more than once: {', '.join(repeated)} (`--repeat K` runs a task K times)")
    templates = catalog.templates if isinstance(catalog, Catalog) else {}
    chosen: list[LoadedTask] = []
    unknown = []
    for task_id in wanted:
        if task_id in templates:
            chosen += catalog.instances(task_id)  # type: ignore[attr-defined]
        elif task_id in catalog:
            chosen.append(catalog[task_id])
        else:
            unknown.append(task_id)
    if unknown:
        raise TaskFileError(f"unknown task ids: {', '.join(unknown)} (see `computerops tasks list`)")
    return list({task.id: task for task in chosen}.values())
