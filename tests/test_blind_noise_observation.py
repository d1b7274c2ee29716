"""Blind cases against the adapter's observation under page noise (issue 49; docs/noise.md "What the adapter does
now"), written from its contract, not from its authors' examples: no control a person could operate is hidden, and no
control a person cannot operate is offered as operable.

The pages (tests/fixtures/pages/blind-noise/, kept out of the fidelity audit of every fixture page, which globs only the
top folder) are built as back-office apps and consent-management platforms build them: a <dialog> opened with
showModal() holding a frame and a shadow root, a non-modal dialog, a drawer, closed dialogs, a modal in a frame or in a
web component's shadow root, a see-through layer that lets the pointer through and a transparent one that does not, a
banner over part of a control, a sticky header inside a scrolling grid, OneTrust's dark filter, a frame under a
banner, an endless feed inside a scrolling box. Each page records what its controls received in `window.record`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.acting import ActionOutcome
from adapter.actions import Click, Fill, More
from adapter.driver import PageDriver
from adapter.observation import Observation

pytestmark = pytest.mark.browser

FOLDER = "blind-noise"
COVERS = re.compile(r"is fixed over the window and covers (\d+) controls? marked covered")


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=20_000) as page_driver:
        yield page_driver


async def observe(driver: PageDriver, page: str) -> Observation:
    return await open_page(driver, f"{FOLDER}/{page}")


async def received(driver: PageDriver) -> list[str]:
    """What the page's controls received, in order (each page's own `window.record`)."""
    return [str(entry) for entry in await driver.page.evaluate("() => window.record")]


async def click(driver: PageDriver, observation: Observation, name: str) -> ActionOutcome:
    return await driver.act(Click(id=named(observation, name).id), 1)


def names(observation: Observation) -> set[str]:
    return {control.name for control in observation.controls}


def said_covered(observation: Observation) -> int:
    """How many controls the header's notices say are covered for good, over every box it names."""
    return sum(int(count) for count in COVERS.findall(observation.text))


def marked_covered(observation: Observation) -> int:
    return sum(control.covered for control in observation.controls)


class TestAModalDialogLeavesOnlyItself:
    """An open modal dialog leaves the page behind it out, and says so; what it holds (a field, a button, a frame's
    button, a shadow root's button) stays offered and works."""

    async def test_everything_the_native_modal_holds_is_offered_and_nothing_behind_it(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "modal-native.html")
        assert observation.modal == "Approval settings"
        assert "A modal dialog ('Approval settings') is open" in observation.text
        offered = names(observation)
        assert {"Approver", "Inside action", "Framed inside modal", "Shadow inside modal"} <= offered, offered
        assert not offered & {"Behind action", "Behind link", "Framed behind modal"}, offered
        assert "Inside text" in observation.text and "Behind text" not in observation.text

    async def test_a_control_in_the_modal_its_frame_and_its_shadow_root_are_clicked_and_filled(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "modal-native.html")
        for name in ("Inside action", "Framed inside modal", "Shadow inside modal"):
            outcome = await click(driver, observation, name)
            assert outcome.ok, (name, outcome)
        filled = await driver.act(Fill(id=named(observation, "Approver").id, text="R. Ahmed"), 2)
        assert filled.ok, filled
        assert await received(driver) == ["Inside action", "Framed inside modal", "Shadow inside modal"]
        assert await driver.page.evaluate("() => document.querySelector('input[name=approver]').value") == "R. Ahmed"

    async def test_a_control_of_the_page_behind_a_modal_opened_after_the_observation_is_not_clicked(
            self, driver: PageDriver) -> None:
        before = await observe(driver, "modal-late.html")
        behind = named(before, "Behind action").id
        assert (await click(driver, before, "Open dialog")).ok
        # the id of the page behind, from the observation before the dialog opened: the click must not reach it
        stale = await driver.act(Click(id=behind), 2)
        assert not stale.ok, stale
        after = await driver.observe()
        assert after.modal == "Delete user?" and names(after) == {"Cancel"}, after.text
        refused = await driver.act(Click(id=behind), 3)
        assert not refused.ok and refused.rejection is not None and refused.rejection.cause == "unknown_control"
        assert await received(driver) == []

    async def test_once_the_modal_closes_the_page_behind_it_is_offered_again(self, driver: PageDriver) -> None:
        before = await observe(driver, "modal-late.html")
        assert (await click(driver, before, "Open dialog")).ok
        inside = await driver.observe()
        assert (await click(driver, inside, "Cancel")).ok
        after = await driver.observe()
        assert after.modal is None and "A modal dialog (" not in after.text
        assert (await click(driver, after, "Behind action")).ok
        assert await received(driver) == ["Cancel", "Behind action"]


    async def test_a_list_behind_an_open_modal_is_not_said_to_load_more(self, driver: PageDriver) -> None:
        observation = await observe(driver, "modal-hidden-open.html?state=open")
        assert observation.modal == "Setup wizard" and names(observation) == {"Next"}
        assert not observation.loads_more and "loads as its end" not in observation.text

    @pytest.mark.parametrize("state", ["styled-away", "faded"])
    async def test_a_modal_dialog_styled_away_without_closing_leaves_nothing_offered_behind_it(
            self, driver: PageDriver, state: str) -> None:
        observation = await observe(driver, f"modal-hidden-open.html?state={state}")
        assert "Behind action" not in names(observation), observation.text
        assert not observation.loads_more
        assert "A modal dialog ('Setup wizard') is open but hidden" in observation.text, observation.text


class TestWhatIsNoModal:
    """A closed dialog, one shown without showModal(), one marked aria-modal="false", a hidden aria-modal one and a
    drawer hide nothing; a modal inside a frame makes only that frame's page inert."""

    async def test_non_modal_closed_and_hidden_dialogs_hide_nothing(self, driver: PageDriver) -> None:
        observation = await observe(driver, "dialogs-nonmodal.html")
        assert observation.modal is None and "A modal dialog (" not in observation.text
        offered = names(observation)
        assert {"Page action", "Non-modal dialog button", "Explicit non-modal button", "Drawer button"} <= offered
        assert not offered & {"Closed dialog button", "Was modal button", "Hidden modal button"}, offered
        assert "Page text" in observation.text
        for name in ("Page action", "Non-modal dialog button", "Explicit non-modal button", "Drawer button"):
            assert (await click(driver, observation, name)).ok, name
        assert await received(driver) == ["Page action", "Non-modal dialog button", "Explicit non-modal button",
                                          "Drawer button"]

    async def test_a_modal_inside_a_frame_leaves_the_top_page_usable(self, driver: PageDriver) -> None:
        observation = await observe(driver, "modal-in-frame.html")
        offered = names(observation)
        assert {"Top action", "Framed modal action"} <= offered, offered
        assert "Framed behind its modal" not in offered, offered
        assert (await click(driver, observation, "Top action")).ok
        assert (await click(driver, observation, "Framed modal action")).ok
        assert await received(driver) == ["Top action", "Framed modal action"]

    @pytest.mark.parametrize("kind", ["native", "aria"])
    async def test_a_modal_inside_a_frame_is_said_in_the_header(self, driver: PageDriver, kind: str) -> None:
        observation = await observe(driver, f"modal-in-frame.html?kind={kind}")
        offered = names(observation)
        assert "Framed behind its modal" not in offered and {"Top action", "Framed modal action"} <= offered, offered
        assert "Framed confirmation" in observation.text.split("\n\n", 1)[0], observation.text
        assert observation.modal is None  # the top page stays usable


class TestAModalInAShadowRoot:
    """A web component's modal (a consent manager built as one) makes the page behind it inert as any other."""

    @pytest.mark.parametrize("kind", ["native", "aria", "nested"])
    async def test_the_page_behind_a_modal_in_a_shadow_root_is_left_out(self, driver: PageDriver, kind: str) -> None:
        observation = await observe(driver, f"modal-shadow.html?kind={kind}")
        offered = names(observation)
        assert "Allow selection" in offered, offered
        assert "Behind shadow modal" not in offered, offered
        assert observation.modal == "Privacy preferences"

    @pytest.mark.parametrize("kind", ["native", "aria", "nested"])
    async def test_the_control_of_a_modal_in_a_shadow_root_is_offered_and_works(self, driver: PageDriver,
                                                                                 kind: str) -> None:
        observation = await observe(driver, f"modal-shadow.html?kind={kind}")
        assert (await click(driver, observation, "Allow selection")).ok
        assert await received(driver) == ["Allow selection"]


class TestLayersOverTheWindow:
    """A see-through layer the pointer passes through covers nothing; a transparent layer that takes every click
    covers everything under it, and a click there is refused, never reported as reaching the control."""

    async def test_a_control_under_a_layer_the_pointer_passes_through_is_offered_and_clicked(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "overlays.html?kind=glass")
        page_action, toast = named(observation, "Page action"), named(observation, "Dismiss toast")
        assert not page_action.covered and not toast.covered
        assert said_covered(observation) == 0
        assert (await click(driver, observation, "Page action")).ok
        assert (await click(driver, observation, "Dismiss toast")).ok
        assert await received(driver) == ["Page action", "Dismiss toast"]

    async def test_a_control_under_a_transparent_layer_taking_every_click_is_marked_covered_and_refused(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "overlays.html?kind=catcher")
        page_action = named(observation, "Page action")  # not hidden: the layer shows nothing
        assert page_action.covered, observation.text
        assert said_covered(observation) == marked_covered(observation) == 1
        outcome = await click(driver, observation, "Page action")
        assert not outcome.ok and outcome.rejection is not None and "covered by" in outcome.rejection.reason
        assert await received(driver) == []


class TestABannerOverTheWindow:
    """A box fixed over the window covers for good only what no scroll of the window brings clear; what it covers in
    part, where a person still clicks it, stays operable."""

    async def test_onetrust_s_dark_filter_covers_the_page_until_its_banner_is_answered(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "onetrust.html")
        assert named(observation, "New claim").covered and named(observation, "Archive").covered
        assert not named(observation, "Accept All Cookies").covered
        assert not named(observation, "Cookies Settings").covered
        assert said_covered(observation) == marked_covered(observation) == 2, observation.text
        refused = await click(driver, observation, "New claim")
        assert not refused.ok and refused.rejection is not None and "covered by" in refused.rejection.reason
        assert (await click(driver, observation, "Accept All Cookies")).ok
        after = await driver.observe()
        assert marked_covered(after) == said_covered(after) == 0 and "fixed over" not in after.text
        assert (await click(driver, after, "New claim")).ok
        assert await received(driver) == ["Accept All Cookies", "New claim"]

    async def test_a_control_whose_lower_part_only_is_under_the_banner_is_clicked(self, driver: PageDriver) -> None:
        observation = await observe(driver, "banner-partial.html?part=top")
        assert not named(observation, "Drop files here").covered
        assert (await click(driver, observation, "Drop files here")).ok
        assert await received(driver) == ["Drop files here"]

    @pytest.mark.parametrize("part", ["middle", "side"])
    async def test_a_control_whose_middle_only_is_under_the_banner_is_clicked_where_it_shows(
            self, driver: PageDriver, part: str) -> None:
        observation = await observe(driver, f"banner-partial.html?part={part}")
        assert not named(observation, "Drop files here").covered, observation.text
        assert (await click(driver, observation, "Drop files here")).ok
        assert await received(driver) == ["Drop files here"]

    async def test_a_control_under_the_sticky_header_of_the_window_is_scrolled_clear_and_clicked(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "sticky-window.html")
        assert not named(observation, "Item 20").covered and said_covered(observation) == 0
        assert (await click(driver, observation, "Item 20")).ok
        assert await received(driver) == ["Item 20"]

    @pytest.mark.parametrize("page", ["banner-frame.html", "banner-frame.html?box=1"])
    async def test_a_control_in_a_frame_under_the_banner_is_scrolled_clear_and_clicked(
            self, driver: PageDriver, page: str) -> None:
        observation = await observe(driver, page)
        assert not named(observation, "Framed under banner").covered, observation.text
        outcome = await click(driver, observation, "Framed under banner")
        assert outcome.ok, outcome
        assert await received(driver) == ["Framed under banner"]

    @pytest.mark.parametrize("page", ["sticky-box.html", "sticky-box.html?long=1"])
    async def test_a_row_under_a_sticky_header_of_a_scrolling_grid_is_clicked(self, driver: PageDriver,
                                                                               page: str) -> None:
        observation = await observe(driver, page)
        assert not named(observation, "Order 10").covered, observation.text
        assert (await click(driver, observation, "Order 10")).ok
        assert await received(driver) == ["Order 10"]

    async def test_a_cell_under_a_sticky_column_of_a_grid_scrolling_across_is_clicked(self, driver: PageDriver) -> None:
        observation = await observe(driver, "sticky-box.html?column=1")
        assert not named(observation, "Ship 10").covered and said_covered(observation) == 0, observation.text
        assert (await click(driver, observation, "Ship 10")).ok
        assert await received(driver) == ["Ship 10"]


    @pytest.mark.xfail(strict=True, reason="the case asks more than the page allows: with the content area scrolled "
                                           "to its end (scrollTop 972 of a 1632 px list in a 660 px area, 1280x720 "
                                           "window), 'Open case 40' spans y 664-685 and the banner's top edge is at "
                                           "430, so no scroll brings cases 34-40 clear of it; they are rightly marked "
                                           "covered and their clicks refused (the next case holds the rest)")
    async def test_in_an_app_shell_a_control_under_the_banner_is_scrolled_clear_in_its_content_area(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "app-shell.html")
        assert marked_covered(observation) == said_covered(observation) == 0, observation.text
        assert (await click(driver, observation, "Open case 12")).ok
        assert (await click(driver, observation, "Open case 40")).ok
        assert await received(driver) == ["Open case 12", "Open case 40"]

    async def test_in_an_app_shell_only_the_rows_the_banner_always_covers_are_marked_covered(
            self, driver: PageDriver) -> None:
        observation = await observe(driver, "app-shell.html")
        covered = {control.name for control in observation.controls if control.covered}
        assert covered == {f"Open case {n}" for n in range(34, 41)}, observation.text
        assert said_covered(observation) == len(covered)
        assert (await click(driver, observation, "Open case 12")).ok
        assert (await click(driver, observation, "Open case 30")).ok
        refused = await click(driver, observation, "Open case 40")
        assert not refused.ok and refused.rejection is not None and "covered by" in refused.rejection.reason
        assert await received(driver) == ["Open case 12", "Open case 30"]

    async def test_in_an_app_shell_a_control_under_the_banner_is_marked_covered_or_clicked(
            self, driver: PageDriver) -> None:
        # the weaker promise, whatever the page's scrolling: a control is never refused as covered while its line
        # offers it as operable, and the header counts exactly the lines marked covered
        observation = await observe(driver, "app-shell.html")
        assert said_covered(observation) == marked_covered(observation)
        for name in ("Open case 12", "Open case 40"):
            control = named(observation, name)
            outcome = await click(driver, observation, name)
            if not control.covered:
                assert outcome.ok, (name, outcome)
            elif not outcome.ok:
                assert outcome.rejection is not None and "covered by" in outcome.rejection.reason


class TestAListThatLoadsOnScroll:
    async def test_an_endless_feed_in_a_scrolling_box_is_said_and_more_loads_it(self, driver: PageDriver) -> None:
        observation = await observe(driver, "lazy-box.html")
        assert observation.loads_more and "loads as its end is scrolled into view" in observation.text
        assert "Entry 10" in names(observation) and "Entry 11" not in names(observation)
        outcome = await driver.act(More(), 1)
        assert outcome.ok and "loaded more" in outcome.note, outcome
        after = await driver.observe()
        assert "Entry 20" in names(after), after.text
        assert (await click(driver, after, "Entry 15")).ok
        assert await received(driver) == ["Entry 15"]

    @pytest.mark.parametrize("sentinel", ["empty", "hidden", "aria-hidden", "inert"])
    async def test_a_window_list_loads_more_whatever_its_sentinel_looks_like(self, driver: PageDriver,
                                                                             sentinel: str) -> None:
        observation = await observe(driver, f"lazy-sentinels.html?sentinel={sentinel}")
        assert "Event 20" in names(observation) and "Event 21" not in names(observation)
        assert observation.loads_more, observation.text[-300:]
        outcome = await driver.act(More(), 1)
        assert outcome.ok and "loaded more" in outcome.note, outcome
        assert "Event 40" in names(await driver.observe())
