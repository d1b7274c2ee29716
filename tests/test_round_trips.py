"""Protocol round trips per step (issue 48, item 3; computerops/bench/roundtrips.py): counted, not timed, so the
figures hold on a loaded machine. docs/architecture.md ("Round trips per step") states them for every kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser

from computerops.bench.roundtrips import RoundTripFigures, bench_round_trips

PAGES = Path(__file__).parent / "fixtures" / "pages"
WORLD_CALL = "CDPSession.send Runtime.callFunctionOn"


@pytest.fixture(scope="module")
async def counted(browser: Browser) -> dict[str, RoundTripFigures]:
    figures = await bench_round_trips(browser, PAGES, lambda _: None, kinds=("fill", "observation"))
    return {figure.kind: figure for figure in figures}


@pytest.mark.browser
async def test_a_fill_checks_the_control_and_reads_the_field_in_one_round_trip(
        counted: dict[str, RoundTripFigures]) -> None:
    fill = counted["fill"]
    # the check with the fill's two reads, the fill into the field, the settle's wait, the value read back, the
    # observation: five calls in the world (the check and the reads were three before they were merged)
    assert fill.calls[WORLD_CALL] == 5
    assert fill.adapter == sum(fill.calls.values()) and fill.floor >= 1


@pytest.mark.browser
async def test_observing_an_unchanged_document_is_one_round_trip(counted: dict[str, RoundTripFigures]) -> None:
    assert (counted["observation"].adapter, counted["observation"].calls) == (1, {WORLD_CALL: 1})
