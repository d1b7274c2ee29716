"""Blind cases for four mechanisms of the task catalog, written from their docstrings and the docs alone (never from
the tests that already cover them): the catalog's load cache, `computerops mock-llm --tasks`, row filters rendered
as one Jinja loop, and fresh subsets' redraws. Each case names the wrong implementation it tells apart from a right
one. Everything runs on small catalogs copied into temporary folders (no browser, no whole-catalog load)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import TemplateSyntaxError
from typer.testing import CliRunner

import adapter.scripted
import tasks
import tasks.catalog as catalog_module
from adapter.prompts import OBSERVATION_MARK, TASK_MARK
from computerops.catalog import subsets
from computerops.cli.main import app as cli_app
from computerops.core.hashing import canonical_sha256
from tasks.catalog import Catalog, InstanceUndefined, LoadedTask, TaskFileError, load_catalog
from tasks.templates import FRESH_SEED_FLOOR, NoRowFits, TemplateBlock, _filtered, draw_parameters, evaluate

SOURCE = Path(catalog_module.__file__).parent / "catalog" / "helpdesk"
FIXED_FILE = "reply-without-escalating.yaml"
FIXED_ID = "helpdesk.reply-without-escalating"
VARYING_FILE = "solve-ticket.yaml"
VARYING_ID = "helpdesk.solve-ticket"
ONE_SHOT = settings(max_examples=1, deadline=None)


def varying_text(template_id: str = VARYING_ID, published: int = 12, *, odd_undefined: bool = False) -> str:
    """solve-ticket.yaml as another template: its id, its published count (two digits, so an edit keeps the size)
    and, with `odd_undefined`, no instance at odd fresh seeds (its row filter false there: NoRowFits)."""
    assert 10 <= published <= 99
    text = (SOURCE / VARYING_FILE).read_text(encoding="utf-8")
    assert text.count(f"id: {VARYING_ID}\n") == 1 and text.count("published: 12\n") == 1
    text = text.replace(f"id: {VARYING_ID}\n", f"id: {template_id}\n").replace("published: 12\n",
                                                                               f"published: {published}\n")
    if odd_undefined:
        assert text.count("it.id >= 45 and") == 1
        text = text.replace("it.id >= 45 and", f"(seed < {FRESH_SEED_FLOOR} or seed % 2 == 0) and it.id >= 45 and")
    return text


def write_keeping_stat(path: Path, text: str) -> None:
    """Write `text` over `path` and put its modification time back: an edit only the bytes tell."""
    before = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def fixed_text() -> str:
    """reply-without-escalating.yaml (a single-instance template) without its `template:` block: a fixed task."""
    text = (SOURCE / FIXED_FILE).read_text(encoding="utf-8")
    fixed, removed = re.subn(r"^template:\n(?:  .*\n)+", "", text, flags=re.MULTILINE)
    assert removed == 1
    return fixed


def small_catalog(root: Path, *, fixed: bool = True) -> Path:
    """A varying template (solve-ticket, 12 published seeds) and, with `fixed`, a fixed task."""
    (root / "helpdesk").mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCE / VARYING_FILE, root / "helpdesk" / VARYING_FILE)
    if fixed:
        (root / "helpdesk" / FIXED_FILE).write_text(fixed_text(), encoding="utf-8")
    return root


def where_each_comes_from(catalog: Catalog) -> dict[str, tuple[Path, int]]:
    return {tid: (t.path, len(t.seeds)) for tid, t in catalog.templates.items()}


# --- 1. the catalog's load cache --------------------------------------------------------------------------------

def test_the_same_bytes_give_the_same_catalog_with_the_instances_it_generated(tmp_path: Path) -> None:
    """Kills: a cache that reloads every call (the instances generated are lost) or one keyed so loosely that it
    never hits (a fresh Catalog each time)."""
    root = small_catalog(tmp_path / "cat")
    first = load_catalog(root)
    fresh = first[f"{VARYING_ID}@{FRESH_SEED_FLOOR + 2}"]
    again = load_catalog(root)
    assert again is first
    assert again[f"{VARYING_ID}@{FRESH_SEED_FLOOR + 2}"] is fresh


def test_an_edit_that_keeps_the_size_and_the_modification_time_loads_anew(tmp_path: Path) -> None:
    """Kills: a cache keyed by (name, size, mtime) instead of the bytes. 12 -> 11 published seeds keeps the size."""
    root = small_catalog(tmp_path / "cat")
    first = load_catalog(root)
    assert len(first.templates[VARYING_ID].seeds) == 12
    path = root / "helpdesk" / VARYING_FILE
    size = path.stat().st_size
    write_keeping_stat(path, varying_text(published=11))
    assert path.stat().st_size == size
    second = load_catalog(root)
    assert second is not first
    assert len(second.templates[VARYING_ID].seeds) == 11
    assert f"{VARYING_ID}@12" not in list(second) and f"{VARYING_ID}@12" in list(first)  # published ones
    assert second.templates[VARYING_ID].sha256 != first.templates[VARYING_ID].sha256
    write_keeping_stat(path, varying_text(published=12))  # the first bytes again: what they say, whichever object
    assert where_each_comes_from(load_catalog(root)) == where_each_comes_from(first)


def test_a_file_broken_after_a_load_is_refused_not_served_stale(tmp_path: Path) -> None:
    """Kills: a cache that keeps answering with the last good catalog of a folder, and one that caches a failure."""
    root = small_catalog(tmp_path / "cat")
    load_catalog(root)
    path = root / "helpdesk" / VARYING_FILE
    good = path.read_text(encoding="utf-8")
    path.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match=VARYING_FILE):
        load_catalog(root)
    with pytest.raises(TaskFileError):  # still refused on the second ask
        load_catalog(root)
    path.write_text(good, encoding="utf-8")
    assert VARYING_ID in load_catalog(root).templates


def test_two_files_that_swap_their_bytes_are_a_new_catalog(tmp_path: Path) -> None:
    """Kills: a key over the set of names plus the multiset of contents (the same both ways) instead of each name
    with its own bytes: each template must come from the file that holds it now."""
    root = tmp_path / "cat"
    (root / "helpdesk").mkdir(parents=True)
    a, b = root / "helpdesk" / "a.yaml", root / "helpdesk" / "b.yaml"
    a.write_text(varying_text("helpdesk.alpha", 20), encoding="utf-8")
    b.write_text(varying_text("helpdesk.beta", 30), encoding="utf-8")
    first = load_catalog(root)
    assert first.templates["helpdesk.alpha"].path == a
    alpha, beta = a.read_bytes(), b.read_bytes()
    a.write_bytes(beta)
    b.write_bytes(alpha)
    second = load_catalog(root)
    assert second.templates["helpdesk.alpha"].path == b
    assert second.templates["helpdesk.beta"].path == a
    assert second[f"helpdesk.alpha@{FRESH_SEED_FLOOR}"].path == b


def test_a_renamed_or_moved_file_is_a_new_catalog_naming_the_new_place(tmp_path: Path) -> None:
    """Kills: a key over contents alone, or over base names (a file moved into a sub-folder keeps its base name)."""
    root = small_catalog(tmp_path / "cat", fixed=False)
    first = load_catalog(root)
    old = root / "helpdesk" / VARYING_FILE
    renamed = root / "helpdesk" / "renamed.yaml"
    old.rename(renamed)
    second = load_catalog(root)
    assert second is not first and second.templates[VARYING_ID].path == renamed
    (root / "helpdesk" / "deeper").mkdir()
    moved = root / "helpdesk" / "deeper" / "renamed.yaml"
    renamed.rename(moved)
    third = load_catalog(root)
    assert third.templates[VARYING_ID].path == moved
    assert third[f"{VARYING_ID}@1"].path == moved


def test_a_file_added_or_removed_anywhere_below_the_root_is_seen(tmp_path: Path) -> None:
    """Kills: a key over the top folder's listing only (not recursive), or over the files already known."""
    root = small_catalog(tmp_path / "cat")
    first = load_catalog(root)
    nested = root / "helpdesk" / "more" / "deep"
    nested.mkdir(parents=True)
    (nested / "extra.yaml").write_text(varying_text("helpdesk.extra", 15), encoding="utf-8")
    second = load_catalog(root)
    assert "helpdesk.extra" in second.templates and "helpdesk.extra" not in first.templates
    assert len(second) == len(first) + 15
    (root / "helpdesk" / FIXED_FILE).unlink()
    third = load_catalog(root)
    assert FIXED_ID not in third.templates and f"{FIXED_ID}@1" not in third


def test_the_same_files_in_two_folders_are_two_catalogs(tmp_path: Path) -> None:
    """Kills: a cache keyed by content alone, which returns folder X's catalog (its paths) for folder Y, and an
    edit of Y that leaks into X's catalog."""
    x = small_catalog(tmp_path / "x", fixed=False)
    y = small_catalog(tmp_path / "y", fixed=False)
    cx = load_catalog(x)
    cy = load_catalog(y)
    assert cx is not cy
    assert cx.templates[VARYING_ID].path.is_relative_to(x)
    assert cy.templates[VARYING_ID].path.is_relative_to(y)
    assert cy[f"{VARYING_ID}@3"].path.is_relative_to(y)
    write_keeping_stat(y / "helpdesk" / VARYING_FILE, varying_text(published=40))
    assert len(load_catalog(y)) == 40
    again = load_catalog(x)
    assert again is cx and len(again) == 12


def test_the_repository_catalog_is_not_pushed_out_by_many_other_folders(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: one shared bounded cache for every folder (tests and authors loading a dozen catalogs would make the
    repository's catalog, and the instances it generated, load again). The repository is played by a temporary
    folder (CATALOG_ROOT patched) with a cache of its own like the real one, so the real one is left as it is."""
    repo = small_catalog(tmp_path / "repo", fixed=False)
    real = catalog_module._repository_catalog
    replica = functools.lru_cache(maxsize=real.cache_parameters()["maxsize"])(real.__wrapped__)
    monkeypatch.setattr(catalog_module, "CATALOG_ROOT", repo)
    monkeypatch.setattr(catalog_module, "_repository_catalog", replica)
    first = load_catalog(repo)
    generated = first[f"{VARYING_ID}@{FRESH_SEED_FLOOR + 4}"]
    for n in range(20):
        other = tmp_path / f"other-{n}"
        (other / "helpdesk").mkdir(parents=True)
        (other / "helpdesk" / VARYING_FILE).write_text(varying_text(published=10 + n), encoding="utf-8")
        assert len(load_catalog(other)) == 10 + n
    again = load_catalog(repo)
    assert again is first
    assert again[f"{VARYING_ID}@{FRESH_SEED_FLOOR + 4}"] is generated
    # The same bytes in another folder are that folder's catalog, not the repository's.
    twin = small_catalog(tmp_path / "twin", fixed=False)
    assert load_catalog(twin).templates[VARYING_ID].path.is_relative_to(twin)


def test_a_catalog_cannot_be_changed_through_its_mapping() -> None:
    """The shared catalog is handed to every caller: its mapping face offers no way to set or delete an instance
    (kills a Catalog that subclasses dict)."""
    assert not hasattr(Catalog, "__setitem__") and not hasattr(Catalog, "__delitem__")


@pytest.mark.parametrize("template_id", [VARYING_ID, FIXED_ID])
def test_changing_an_instance_as_rendered_leaks_into_no_later_load(tmp_path: Path, template_id: str) -> None:
    """`TaskTemplate.rendered` is "for tools that change it and load it again": a tool that changes what it got
    must not change the shared catalog that the next `load_catalog` returns (kills a rendering that hands out the
    cached file content's own lists and mappings)."""
    root = small_catalog(tmp_path / "cat")
    catalog = load_catalog(root)
    template = catalog.templates[template_id]
    seed = template.seeds[0]
    before = json.dumps(template.rendered(seed), sort_keys=True, default=str)
    changed = template.rendered(seed)
    changed["scripted_control"][0]["name"] = "changed by a tool"
    changed["expected_state"].append({"kind": "row", "name": "added-by-a-tool"})
    changed["allowed_mutations"].clear()
    again = load_catalog(root).templates[template_id]
    assert json.dumps(again.rendered(seed), sort_keys=True, default=str) == before


Operation = tuple[str, int, int]
"""(kind, which file, value): kinds edit (published = value), rename, add, remove, noop."""


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["edit", "rename", "add", "remove", "noop"]), st.integers(0, 5),
                          st.integers(10, 99)), min_size=1, max_size=7))
def test_any_sequence_of_edits_loads_what_the_files_say_now(operations: list[Operation]) -> None:
    """Kills every stale-cache variant at once: after each step the loaded catalog holds exactly the templates the
    files hold now, each from its file and with its published count; a step that changes nothing returns the same
    catalog."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "cat"
        (root / "helpdesk").mkdir(parents=True)
        files: dict[str, tuple[str, int]] = {"f0.yaml": ("helpdesk.t0", 10)}  # file name -> (id, published)
        (root / "helpdesk" / "f0.yaml").write_text(varying_text("helpdesk.t0", 10), encoding="utf-8")
        made = 1
        previous = load_catalog(root)
        for kind, which, value in operations:
            names = sorted(files)
            name = names[which % len(names)]
            path = root / "helpdesk" / name
            if kind == "edit":
                template_id, _ = files[name]
                write_keeping_stat(path, varying_text(template_id, value))
                files[name] = (template_id, value)
            elif kind == "rename":
                new = f"f{made}.yaml"
                made += 1
                path.rename(root / "helpdesk" / new)
                files[new] = files.pop(name)
            elif kind == "add":
                new_id = f"helpdesk.t{made}"
                (root / "helpdesk" / f"f{made}.yaml").write_text(varying_text(new_id, value), encoding="utf-8")
                files[f"f{made}.yaml"] = (new_id, value)
                made += 1
            elif kind == "remove" and len(files) > 1:
                path.unlink()
                del files[name]
            else:
                kind = "noop"
            current = load_catalog(root)
            assert where_each_comes_from(current) == {
                template_id: (root / "helpdesk" / file, published) for file, (template_id, published) in files.items()}
            if kind == "noop":
                assert current is previous
            previous = current


# --- 2. computerops mock-llm --tasks -----------------------------------------------------------------------------

Served = dict[str, Any]


@pytest.fixture
def served_by_mock_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Catalog, Served]]:
    """`computerops mock-llm` over a small catalog (tasks.load_catalog patched), with uvicorn.run caught instead of
    serving: what it would serve (its app, host and port) and the tasks the endpoint was made over."""
    catalog = load_catalog(small_catalog(tmp_path / "cat"))
    served: Served = {}
    real = adapter.scripted.create_scripted_app

    def recording(tasks_given: list[LoadedTask], *args: Any, **kwargs: Any) -> Any:
        served["tasks"] = [t.id for t in tasks_given]
        return real(tasks_given, *args, **kwargs)

    def run(app: Any, **kwargs: Any) -> None:
        served["app"] = app
        served.update(kwargs)

    monkeypatch.setattr(tasks, "load_catalog", lambda *args, **kwargs: catalog)
    monkeypatch.setattr(adapter.scripted, "create_scripted_app", recording)
    monkeypatch.setattr("uvicorn.run", run)
    yield catalog, served


@pytest.mark.parametrize(("selection", "expected"), [
    (f"{VARYING_ID}@3", [f"{VARYING_ID}@3"]),
    (VARYING_ID, [f"{VARYING_ID}@{n}" for n in range(1, 13)]),
    (f" {VARYING_ID}@3 , {FIXED_ID}@1 ,", [f"{VARYING_ID}@3", f"{FIXED_ID}@1"]),
    (f"{VARYING_ID}@{FRESH_SEED_FLOOR + 6}", [f"{VARYING_ID}@{FRESH_SEED_FLOOR + 6}"]),
    (f"{VARYING_ID}@3,{VARYING_ID}@3", None),  # refused naming it (issue 47: an id given twice is a typo)
    (FIXED_ID, [f"{FIXED_ID}@1"]),
])
def test_mock_llm_serves_exactly_the_tasks_given(served_by_mock_llm: tuple[Catalog, Served], selection: str,
                                                 expected: list[str] | None) -> None:
    """Kills: --tasks ignored (the whole catalog served), a template id taken as an instance id, a fresh seed
    refused, spaces or an empty item taken as ids, a repeated id served twice (two tasks with one instruction: now
    refused, naming it, and nothing served)."""
    _, served = served_by_mock_llm
    result = CliRunner().invoke(cli_app, ["mock-llm", "--tasks", selection, "--port", "8799"])
    if expected is None:
        assert result.exit_code != 0 and "given more than once" in result.output and "tasks" not in served
        return
    assert result.exit_code == 0, result.output
    assert sorted(served["tasks"]) == sorted(expected)
    assert served["host"] == "127.0.0.1"


def test_mock_llm_without_tasks_serves_every_published_instance(served_by_mock_llm: tuple[Catalog, Served]) -> None:
    catalog, served = served_by_mock_llm
    result = CliRunner().invoke(cli_app, ["mock-llm"])
    assert result.exit_code == 0, result.output
    assert sorted(served["tasks"]) == sorted(catalog)


@pytest.mark.parametrize(("selection", "unknown"), [
    ("helpdesk.no-such-task", ["helpdesk.no-such-task"]),
    (f"{VARYING_ID}@3,helpdesk.no-such-task@2", ["helpdesk.no-such-task@2"]),
    (f"{FIXED_ID}@2", [f"{FIXED_ID}@2"]),  # a fixed task has no other seed
    (f"{VARYING_ID}@03", [f"{VARYING_ID}@03"]),  # one instance has one id: no leading zero
    ("solve-ticket", ["solve-ticket"]),  # not a prefix match
])
def test_mock_llm_refuses_unknown_ids_with_exit_2_before_serving(served_by_mock_llm: tuple[Catalog, Served],
                                                                 selection: str, unknown: list[str]) -> None:
    """Kills: unknown ids dropped silently (a server over fewer tasks than asked), a traceback instead of a message,
    exit 1, or the port taken first; the message names the unknown ids and not the known ones."""
    _, served = served_by_mock_llm
    result = CliRunner().invoke(cli_app, ["mock-llm", "--tasks", selection])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for task_id in unknown:
        assert task_id in result.output
    if "," in selection:
        assert f"{VARYING_ID}@3" not in result.output.replace(selection, "")
    assert "app" not in served


def test_mock_llm_with_no_id_at_all_exits_2(served_by_mock_llm: tuple[Catalog, Served]) -> None:
    _, served = served_by_mock_llm
    result = CliRunner().invoke(cli_app, ["mock-llm", "--tasks", " , "])
    assert result.exit_code == 2, result.output
    assert "app" not in served


def test_mock_llm_endpoint_knows_only_the_tasks_given(served_by_mock_llm: tuple[Catalog, Served]) -> None:
    """End to end through the app it would serve: the oracle acts on a given task's instruction and says the
    instruction of a task left out is no task it knows (kills a filter applied to a list that the app ignores)."""
    from fastapi.testclient import TestClient

    catalog, served = served_by_mock_llm
    given_task, left_out = catalog[f"{VARYING_ID}@3"], catalog[f"{VARYING_ID}@4"]
    assert given_task.spec.instruction != left_out.spec.instruction
    result = CliRunner().invoke(cli_app, ["mock-llm", "--policy", "oracle", "--tasks", given_task.id])
    assert result.exit_code == 0, result.output
    client = TestClient(served["app"])

    def reply(task: LoadedTask) -> str:
        response = client.post("/v1/chat/completions", json={"model": "scripted:oracle", "messages": [
            {"role": "system", "content": "You operate a browser."},
            {"role": "user", "content": f"{TASK_MARK}{task.spec.instruction}{OBSERVATION_MARK}(empty page)"}]})
        assert response.status_code == 200
        return str(response.json()["choices"][0]["message"])

    assert "not a task" not in reply(given_task)
    assert "not a task" in reply(left_out)


# --- 3. row filters rendered as one Jinja loop -------------------------------------------------------------------

def outcome(run: Callable[[], list[dict[str, Any]]]) -> tuple[str, Any]:
    """What a filtering gives: the ids it kept, in order, or the kind of error it raised."""
    try:
        return "kept", [row["id"] for row in run()]
    except Exception as exc:
        return "raised", type(exc).__name__


def per_row(test: str, context: Mapping[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference: the expression evaluated for each row alone (the row is `it`)."""
    return [row for row in rows if evaluate(test, {**context, "it": row})]


def table_count(table: str, /, **where: Any) -> int:
    """A nested function as `count(...)` is: rows of a fixed table matching `where`."""
    fixed: dict[str, list[dict[str, Any]]] = {"t": [{"k": 1}, {"k": 1}, {"k": 2}, {"k": None}]}
    return sum(1 for row in fixed.get(table, []) if all(row.get(c) == v for c, v in where.items()))


TRICKY_TEXTS = ["", "x", "endfor", "%}", "{%", "{{", "}}", "{#", "#}", "it's", 'say "hi"', "a\\b", "line\nbreak",
                "{% endfor %}", "{% endif %}", "%}{% endfor %}{% for it in x %}", "loop", "0", " "]


def jinja_string(text: str) -> str:
    """`text` as a Jinja string literal (Python's escapes, which Jinja reads the same)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


rows_strategy = st.lists(st.fixed_dictionaries({
    "a": st.one_of(st.none(), st.integers(-3, 3)),
    "b": st.booleans(),
    "name": st.one_of(st.sampled_from(TRICKY_TEXTS), st.text(alphabet="ab{}%#'\"\\ \n", max_size=6)),
}), max_size=8).map(lambda rows: [{"id": i, **row} for i, row in enumerate(rows)])

atoms = st.one_of(
    st.sampled_from(["it.a", "it.b", "it.name", "it.id", "none", "true", "false", "k", "it.missing", "loop.index0",
                     "count('t', k=it.a)", "count('t')", "(it.name | length)", "it['a']", "[it.a, 1]"]),
    st.integers(-2, 3).map(str),
    st.sampled_from(TRICKY_TEXTS).map(jinja_string),
)


def combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(inner, st.sampled_from(["==", "!=", "<", ">=", "and", "or", "in", "~", "+"]), inner)
    return st.one_of(
        binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}]"),
        inner.map(lambda e: f"({e} | default('d'))"),
        inner.map(lambda e: f"count('t', k={e})"),
        inner.map(lambda e: f"(not {e})"),
        inner.map(lambda e: f"({e} is none)"),
        inner.map(lambda e: f"({e} is defined)"),
        inner.map(lambda e: f"({e} is string)"),
    )


def bare(expression: str) -> str:
    """The expression without its outer parentheses, where it has them: how a filter is usually written (a
    conditional or a tuple at the top is left to the cases below)."""
    return expression[1:-1] if expression.startswith("(") and expression.endswith(")") and " if " not in expression \
        else expression


filters = st.recursive(atoms, combine, max_leaves=6).flatmap(lambda e: st.sampled_from([e, bare(e)]))


@settings(max_examples=300, deadline=None)
@given(filters, rows_strategy, st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(TRICKY_TEXTS)))
def test_a_row_filter_keeps_what_the_per_row_evaluation_keeps(test: str, rows: list[dict[str, Any]],
                                                              k: Any) -> None:
    """Kills: a loop that misreads a filter holding template delimiters or `endfor` in a string, one that gives
    `loop` the for-loop's meaning, one that reorders or repeats rows, one that swallows an error (a partial list)
    or raises where the per-row evaluation keeps rows; `none`, `count(...)` and escapes included."""
    context = {"k": k, "count": table_count, "seed": 7}
    assert outcome(lambda: _filtered(test, context, rows)) == outcome(lambda: per_row(test, context, rows))


@pytest.mark.parametrize("test", [
    "it.name == '%}'", "it.name == '{%'", "it.name == 'endfor'", "it.name != \"it's\"", "it.name == 'a\\\\b'",
    "loop.index0 == 0", "it.a is none", "count('t', k=it.a) >= 2", "it.name ~ '}' == 'x}'",
    "it.name in ['{% endfor %}', '%}{% endfor %}{% for it in x %}']", "it.missing", "it.a > 'x'",
    # No expression: text that would close the loop's `if` and keep every row if pasted into it.
    "false %}{{ loop.index0 }} {% endif %}{% if false", "it.a }}{{ 1", "it.a {# x #}",
])
def test_named_tricky_filters_select_as_each_row_does(test: str) -> None:
    rows = [{"id": i, "a": a, "name": name}
            for i, (a, name) in enumerate([(1, "x"), (None, "%}"), (3, "endfor"), (2, "{%"), (0, "it's"),
                                           (5, "a\\b"), (1, "{% endfor %}"), (1, "%}{% endfor %}{% for it in x %}")])]
    context = {"count": table_count}
    assert outcome(lambda: _filtered(test, context, rows)) == outcome(lambda: per_row(test, context, rows))


def test_an_error_on_a_late_row_fails_the_whole_filter() -> None:
    """Kills: a loop that stops at the first error and returns the rows kept so far, or skips the failing row."""
    rows: list[dict[str, Any]] = [{"id": 0, "a": 1}, {"id": 1, "a": 2}, {"id": 2, "a": "text"}]
    assert outcome(lambda: _filtered("it.a > 0", {}, rows)) == ("raised", "TypeError")
    assert outcome(lambda: per_row("it.a > 0", {}, rows)) == ("raised", "TypeError")


def test_a_conditional_expression_filter_keeps_what_each_row_keeps() -> None:
    rows = [{"id": 0, "a": 1, "b": True}, {"id": 1, "a": 0, "b": False}, {"id": 2, "a": 2, "b": True}]
    test = "it.a if it.b else false"
    assert outcome(lambda: per_row(test, {}, rows)) == ("kept", [0, 2])
    assert outcome(lambda: _filtered(test, {}, rows)) == ("kept", [0, 2])


def test_a_bare_tuple_filter_fails_as_the_per_row_evaluation_fails() -> None:
    rows = [{"id": 0, "a": 1, "b": True}, {"id": 1, "a": 0, "b": False}]
    test = "it.a, it.b"
    assert outcome(lambda: per_row(test, {}, rows)) == ("raised", "TemplateSyntaxError")
    with pytest.raises(TemplateSyntaxError):
        _filtered(test, {}, rows)


def test_a_parameter_named_it_does_not_break_a_filter_that_cannot_loop() -> None:
    rows = [{"id": 0, "name": "%}"}, {"id": 1, "name": "x"}]
    assert outcome(lambda: _filtered("it.name != 'y'", {"it": 5}, rows)) == ("kept", [0, 1])
    assert outcome(lambda: _filtered("it.name != '%}'", {"it": 5}, rows)) == ("kept", [1])


def fake_rows(rows: list[dict[str, Any]]) -> Callable[[], Any]:
    return lambda: {"t": tuple(rows)}


@settings(max_examples=60, deadline=None)
@given(filters, rows_strategy, st.sampled_from(["first", "last"]))
def test_a_row_parameter_draws_from_the_rows_the_filter_keeps(test: str, rows: list[dict[str, Any]],
                                                              pick: str) -> None:
    """Through draw_parameters: the first or last kept row (no order_by: the table's order), NoRowFits when none is
    kept, and a failing filter fails the draw (kills a loop whose indices are off by one or re-sorted)."""
    block = TemplateBlock.model_validate({"varies": "the row", "parameters": {
        "k": {"value": "2"}, "row": {"row": "t", "filter": test, "pick": pick}}})
    def count(table: str, /, **where: Any) -> int:  # the row functions' count over the same table
        return sum(1 for row in rows if table == "t" and all(row.get(c) == v for c, v in where.items()))

    context = {"k": 2, "count": count, "seed": 1}
    try:
        expected: tuple[str, Any] = ("kept", per_row(test, context, rows))
    except Exception as exc:
        expected = ("raised", type(exc).__name__)
    try:
        drawn = draw_parameters(block, key="blind.t", seed=1, rows=fake_rows(rows))
    except NoRowFits:
        assert expected == ("kept", [])
        return
    except Exception:
        assert expected[0] == "raised"
        return
    assert expected[0] == "kept" and expected[1]
    assert drawn["row"] == expected[1][0 if pick == "first" else -1]


def test_a_row_parameter_whose_filter_names_loop_or_holds_delimiters_is_drawn_as_each_row_says() -> None:
    rows = [{"id": 0, "name": "%}"}, {"id": 1, "name": "endfor"}, {"id": 2, "name": "{{"}]
    for test, wanted in (("it.name == '%}'", 0), ("it.name == 'endfor'", 1), ("it.name == '{{'", 2),
                         ("it.name is string and it.id == k", 2)):
        block = TemplateBlock.model_validate({"varies": "the row", "parameters": {
            "k": {"value": "2"}, "row": {"row": "t", "filter": test, "pick": "first"}}})
        assert draw_parameters(block, key="blind.t", seed=1, rows=fake_rows(rows))["row"]["id"] == wanted


# --- 4. fresh subsets' redraws -----------------------------------------------------------------------------------

ODD_ID = "helpdesk.solve-ticket-odd"
EVEN_ID = "helpdesk.solve-ticket-even"


@pytest.fixture(scope="module")
def fresh_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """Two varying templates publishing 10 seeds; `ODD_ID` defines no instance at odd fresh seeds."""
    root = tmp_path_factory.mktemp("fresh") / "cat"
    (root / "helpdesk").mkdir(parents=True)
    (root / "helpdesk" / "odd.yaml").write_text(varying_text(ODD_ID, 10, odd_undefined=True), encoding="utf-8")
    (root / "helpdesk" / "even.yaml").write_text(varying_text(EVEN_ID, 10), encoding="utf-8")
    return load_catalog(root)


def rank(seed: int, template: str) -> str:
    """A template's rank in a fresh draw with `seed` (FRESH_DRAW_METHOD: sha256('<seed>:<template id>'))."""
    return hashlib.sha256(f"{seed}:{template}".encode()).hexdigest()


def defined(catalog: Catalog, task_id: str) -> bool:
    try:
        catalog[task_id]
    except InstanceUndefined:
        return False
    return True


class Script:
    """fresh_seed patched: the scripted offsets above FRESH_SEED_FLOOR first, then new even seeds (defined)."""

    def __init__(self, offsets: list[int]) -> None:
        self.offsets = list(offsets)
        self.next_even = FRESH_SEED_FLOOR + 10_000

    def __call__(self) -> int:
        if self.offsets:
            return FRESH_SEED_FLOOR + self.offsets.pop(0)
        self.next_even += 2
        return self.next_even


def reserve(catalog: Catalog, monkeypatch: pytest.MonkeyPatch, offsets: list[int], count: int,
            seed: int = 3) -> tuple[subsets.ReservedSubset, list[str]]:
    """A fresh reservation with fresh_seed scripted; also every fresh id the reservation asked the catalog for."""
    asked: list[str] = []
    original = Catalog.__getitem__

    def recording(self: Catalog, key: str) -> LoadedTask:
        if key.rsplit("@", 1)[-1].isdigit() and int(key.rsplit("@", 1)[1]) >= FRESH_SEED_FLOOR:
            asked.append(key)
        return original(self, key)

    with monkeypatch.context() as patch:
        patch.setattr(subsets, "fresh_seed", Script(offsets))
        patch.setattr(Catalog, "__getitem__", recording)
        subset = subsets.reserve_subset(catalog, count, seed, fresh=True)
    return subset, asked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 5), max_size=10), st.integers(1, 3), st.integers(0, 5))
def test_every_undefined_draw_is_listed_and_every_defined_one_is_kept(
        fresh_catalog: Catalog, monkeypatch: pytest.MonkeyPatch, offsets: list[int], count: int, seed: int) -> None:
    """Kills: an `undefined` that lists only the first redraw of a task, or lists ids that were defined; a redraw
    that lands on an id already drawn (two tasks alike); a defined id drawn and then dropped."""
    subset, asked = reserve(fresh_catalog, monkeypatch, offsets, count, seed)
    ids = subset.task_ids
    assert len(ids) == count == len(set(ids))
    assert all(defined(fresh_catalog, task_id) for task_id in ids)
    assert all(not defined(fresh_catalog, task_id) for task_id in subset.undefined)
    assert set(subset.undefined) == {task_id for task_id in asked if not defined(fresh_catalog, task_id)}
    assert set(ids) == {task_id for task_id in asked if defined(fresh_catalog, task_id)}
    assert not set(ids) & set(subset.undefined)
    assert subset.lock_sha256 == subset.computed_lock()


def test_an_undefined_redraw_is_never_drawn_again(fresh_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    # Offsets: 1 (odd: undefined) is drawn for ODD_ID or for EVEN_ID; 3, then 3 again, then new even seeds.
    seed = next(s for s in range(100) if rank(s, ODD_ID) < rank(s, EVEN_ID))  # ODD_ID drawn first
    subset, asked = reserve(fresh_catalog, monkeypatch, [1, 3, 3], 1, seed)
    assert f"{ODD_ID}@{FRESH_SEED_FLOOR + 1}" in subset.undefined
    assert len(asked) == len(set(asked))
    assert len(subset.undefined) == len(set(subset.undefined))


def test_a_redraw_never_takes_an_id_already_in_the_subset(fresh_catalog: Catalog,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """ODD_ID drawn first: ODD_ID@1 (undefined), EVEN_ID@2, ODD_ID@2; the redraw of ODD_ID@1 is offered ODD_ID@2,
    already in the subset, and must take another seed (kills a redraw that does not look at what was drawn)."""
    seed = next(s for s in range(100) if rank(s, ODD_ID) < rank(s, EVEN_ID))
    subset, _ = reserve(fresh_catalog, monkeypatch, [1, 2, 2, 2], 3, seed)
    assert subset.undefined == [f"{ODD_ID}@{FRESH_SEED_FLOOR + 1}"]
    assert len(set(subset.task_ids)) == 3
    assert {f"{EVEN_ID}@{FRESH_SEED_FLOOR + 2}", f"{ODD_ID}@{FRESH_SEED_FLOOR + 2}"} < set(subset.task_ids)


def test_a_template_undefined_at_every_redraw_fails_the_reservation_naming_it(
        fresh_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: a redraw that loops for ever, or that gives up by leaving the drawn template out (a smaller subset)."""
    seed = next(s for s in range(100) if rank(s, ODD_ID) < rank(s, EVEN_ID))
    with pytest.raises(subsets.SubsetError, match=ODD_ID):
        reserve(fresh_catalog, monkeypatch, [2 * n + 1 for n in range(subsets.REDRAWS + 5)], 1, seed)


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_a_reservation_with_redraws_round_trips_and_each_edit_of_undefined_breaks_the_lock(
        fresh_catalog: Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    subset, _ = reserve(fresh_catalog, monkeypatch, [1, 3, 5, 7], 3)
    assert subset.undefined  # odd seeds of ODD_ID: undefined wherever ODD_ID was drawn with them
    path = tmp_path / "subset.json"
    subsets.write_subset(path, subset)
    loaded = subsets.load_subset(path)
    assert loaded.undefined == subset.undefined and loaded.task_ids == subset.task_ids
    data = json.loads(path.read_text(encoding="utf-8"))
    edits: list[Callable[[dict[str, Any]], None]] = [
        lambda d: d.pop("undefined"),                                  # as if reserved before it existed
        lambda d: d.update(undefined=[]),                              # emptied
        lambda d: d.update(undefined=d["undefined"][1:]),              # one dropped
        lambda d: d.update(undefined=[*d["undefined"], f"{ODD_ID}@{FRESH_SEED_FLOOR + 99}"]),  # one added
        lambda d: d.update(undefined=[d["undefined"][0].replace("@", "@9")]),  # one rewritten
    ]
    for n, edit in enumerate(edits):
        changed = json.loads(json.dumps(data))
        edit(changed)
        if changed.get("undefined", None) == data["undefined"]:
            continue
        with pytest.raises(subsets.SubsetError, match="edited"):
            subsets.load_subset(write_json(tmp_path / f"edited-{n}.json", changed))


def test_adding_an_undefined_entry_to_a_file_without_redraws_breaks_the_lock(
        fresh_catalog: Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Kills: a lock that leaves `undefined` out whenever it is absent from the file instead of whenever empty."""
    subset, _ = reserve(fresh_catalog, monkeypatch, [2, 4, 6], 2)
    assert subset.undefined == []
    data = json.loads(subset.model_dump_json())
    data["undefined"] = [f"{ODD_ID}@{FRESH_SEED_FLOOR + 1}"]
    with pytest.raises(subsets.SubsetError):
        subsets.load_subset(write_json(tmp_path / "added.json", data))


@pytest.mark.parametrize("fresh", [False, True])
def test_a_file_reserved_before_undefined_existed_still_loads(fresh: bool, fresh_catalog: Catalog,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """An older file: no `undefined` key, its lock the sha256 of every other field as they were then. Kills a lock
    that now always covers `undefined` (every older file refused) and a model that requires the key."""
    if fresh:
        subset, _ = reserve(fresh_catalog, monkeypatch, [2, 4], 2)
    else:
        subset = subsets.reserve_subset(fresh_catalog, 3, 5)
    old = json.loads(subset.model_dump_json())
    old.pop("undefined")
    old.pop("lock_sha256")
    old["lock_sha256"] = canonical_sha256(old)
    loaded = subsets.load_subset(write_json(tmp_path / "old.json", old))
    assert loaded.undefined == [] and loaded.task_ids == subset.task_ids
    tampered = {**old, "count": old["count"] + 1}
    with pytest.raises(subsets.SubsetError):
        subsets.load_subset(write_json(tmp_path / "tampered.json", tampered))


def test_a_published_subset_lists_no_undefined(fresh_catalog: Catalog) -> None:
    subset = subsets.reserve_subset(fresh_catalog, 5, 11)
    assert subset.undefined == [] and subset.instances == "published"
    assert all(task_id in fresh_catalog for task_id in subset.task_ids)

