"""`computerops observe`: a page exactly as the model sees it, from a file, a catalog path or a URL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapter.observation import controls_in_text
from computerops.catalog.observing import ObservedPage, TargetError, parse_target
from computerops.cli.main import app

PAGES = Path(__file__).parent / "fixtures" / "pages"
runner = CliRunner()
browser_test = pytest.mark.browser


def observe_json(*args: str) -> ObservedPage:
    result = runner.invoke(app, ["observe", *args, "--json"])
    assert result.exit_code == 0, result.output
    return ObservedPage.model_validate_json(result.stdout)


@pytest.fixture(scope="module")
def pages_server() -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_targets_are_urls_files_or_catalog_paths(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>hi</p>")
    assert parse_target("http://127.0.0.1:9/x").kind == "url"
    assert parse_target(str(page)).location == str(page.resolve())
    assert parse_target(page.as_uri()).kind == "file"
    catalog = parse_target("helpdesk/tickets")
    assert (catalog.kind, catalog.location, catalog.site) == ("catalog", "/helpdesk/tickets", "helpdesk")
    assert parse_target("/helpdesk").location == "/helpdesk/"
    with pytest.raises(TargetError, match="/helpdesk/"):
        parse_target("/nowhere/page")


def test_a_bad_target_is_refused_with_what_is_accepted() -> None:
    result = runner.invoke(app, ["observe", "no-such-file.html"])
    assert result.exit_code == 2
    assert "catalog pages start with one of: /helpdesk/" in " ".join(result.output.split())


@browser_test
def test_a_file_renders_with_its_control_table_in_json() -> None:
    observed = observe_json(str(PAGES / "forms.html"))
    assert observed.kind == "file" and observed.status is None
    assert observed.controls and [(c.id, c.role, c.name) for c in observed.controls] == controls_in_text(observed.text)
    assert observed.chars == len(observed.text) and observed.estimated_tokens == (observed.chars + 3) // 4
    assert observed.ai_snapshot is None and observed.accessibility is None


@browser_test
def test_a_catalog_page_is_served_from_a_fresh_tenant() -> None:
    observed = observe_json("/helpdesk/tickets", "--seed", "1")
    assert (observed.kind, observed.status, observed.url) == ("catalog", 200, "/helpdesk/tickets")
    assert any(c.role == "link" and c.name == "T-2005" for c in observed.controls)


@browser_test
def test_compare_adds_the_ai_snapshot_its_size_and_the_accessibility_check(pages_server: str) -> None:
    observed = observe_json(f"{pages_server}/table.html", "--compare")
    assert observed.kind == "url" and observed.status == 200
    snapshot = observed.ai_snapshot
    assert snapshot is not None and "[ref=" in snapshot.text and snapshot.chars == len(snapshot.text)
    assert observed.chars_ratio == round(observed.chars / snapshot.chars, 3)
    assert observed.accessibility is not None and observed.accessibility.recall == 1.0
    assert not observed.accessibility.extra


@browser_test
def test_a_long_page_shown_in_parts_is_still_compared_whole() -> None:
    observed = observe_json(str(PAGES / "forms.html"), "--max-chars", "600", "--compare")
    assert observed.truncated and observed.chars <= 600
    assert observed.accessibility is not None and observed.accessibility.recall == 1.0
    assert observed.accessibility.offered > len(observed.controls)  # controls of later parts count too


@browser_test
def test_the_table_output_shows_the_text_the_controls_and_both_sizes_side_by_side() -> None:
    result = runner.invoke(app, ["observe", str(PAGES / "table.html"), "--compare"])
    assert result.exit_code == 0, result.output
    observed = observe_json(str(PAGES / "table.html"))
    for line in observed.text.splitlines()[3:]:
        assert line in result.output
    assert "ai snapshot" in result.output and 'aria_snapshot(mode="ai")' in result.output
    assert f"{len(observed.controls)} controls" in result.output
    assert "recall 100%" in result.output


@browser_test
def test_a_page_that_cannot_be_loaded_is_a_clear_error() -> None:
    result = runner.invoke(app, ["observe", "http://127.0.0.1:9/unreachable"])
    assert result.exit_code == 2
    assert "the browser could not open http://127.0.0.1:9/unreachable" in " ".join(result.output.split())


def test_json_output_is_the_documented_model() -> None:
    # observe_json reads every --json output above with ObservedPage; here that the model refuses what it is not.
    with pytest.raises(ValueError):
        ObservedPage.model_validate_json('{"text": "x"}')
