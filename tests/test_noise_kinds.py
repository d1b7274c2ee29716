"""Page noise as transformations (sites/kit/noise.py), pure: each kind is deterministic under its draw, never changes
what a form submits, never removes a control for good (what it hides, something on the page reveals), and the
noise study checks a page log against the recomputed draws and reads what the agent saw from its observations."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import html as lxml_html
from lxml.html import HtmlElement

from adapter.transcript import AgentTranscript, Step
from computerops.report.page_noise import NoiseEntry, noise_report
from computerops.runs.config import EndpointConfig, plan_episodes
from computerops.runs.records import EpisodeRecord
from computerops.studies.page_noise import seen_pages
from sites.kit.noise import NOISE_KINDS, NoiseKind, drawn, dress, parse_noise_kinds, session_expired_page
from sites.kit.noise_log import NoiseLog, NoisePage

DRESSED_KINDS = [kind for kind in NOISE_KINDS if kind != "session_timeout"]
HEADERS = ["Number", "Status", "Amount", "Customer", "Created", "Reference"]
BUTTONS = ["Save status", "Search", "Filter", "Send", "Approve claim", "Save"]


@st.composite
def pages(draw: st.DrawFn) -> str:
    """A back-office page: a list (with a selection checkbox per row, in a form or not) and a post form."""
    columns = draw(st.integers(min_value=2, max_value=5))
    rows = draw(st.integers(min_value=0, max_value=30))
    in_form = draw(st.booleans())
    head = "".join(f"<th>{HEADERS[i]}</th>" for i in range(columns))
    body = "".join(
        f'<tr><td><input type="checkbox" name="ids" value="{r}"></td>'
        + "".join(f"<td>v{r}-{c}</td>" for c in range(1, columns)) + "</tr>" for r in range(rows))
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if in_form:
        table = (f'<form method="post" action="/x/bulk">{table}'
                 '<button name="op" value="go">Process selected</button></form>')
    label = draw(st.sampled_from(BUTTONS))
    form = (f'<form method="post" action="/x/1"><input type="hidden" name="version" value="3">'
            f'<select name="status"><option value="open">open</option><option value="solved" selected>solved</option>'
            f'</select><textarea name="note">hi</textarea><button type="submit">{label}</button>'
            f'<input type="submit" name="also" value="Save"></form>')
    search = '<form method="get" action="/x"><input name="q" value=""><button>Search</button></form>'
    return f"<!DOCTYPE html><html><head><title>t</title></head><body><main>{search}{table}{form}</main></body></html>"


def _document(page: str) -> HtmlElement:
    return lxml_html.document_fromstring(page)


def _submitted(document: HtmlElement) -> list[tuple[str, Counter[tuple[str, str]]]]:
    """Each form's action, method and its named fields with their values (as the form would send them)."""
    forms = []
    for form in document.iter("form"):
        fields: Counter[tuple[str, str]] = Counter()
        for control in form.iter("input", "select", "textarea", "button"):
            name = control.get("name")
            if name:
                fields[(name, control.get("value") or (control.text or "") if control.tag == "textarea"
                        else control.get("value") or "")] += 1
        forms.append((f"{form.get('method')} {form.get('action')}", fields))
    return forms


def _controls(document: HtmlElement) -> Counter[tuple[str, str, str, str]]:
    return Counter((str(c.tag), c.get("name") or "", c.get("value") or "", c.get("type") or "")
                   for c in document.iter("input", "select", "textarea", "button", "a"))


@settings(max_examples=40, deadline=None)
@given(page=pages(), kind=st.sampled_from(DRESSED_KINDS), choice=st.floats(min_value=0, max_value=0.999))
def test_a_kind_is_deterministic_keeps_what_forms_submit_and_hides_no_control_for_good(
        page: str, kind: NoiseKind, choice: float) -> None:
    first, second = dress(kind, page, choice), dress(kind, page, choice)
    assert first == second, "the same page and draw dress the same"
    if first is None:
        return
    before, after = _document(page), _document(first.html)
    assert _submitted(after) == _submitted(before), "what each form submits is unchanged"
    kept, now = _controls(before), _controls(after)
    assert not kept - now, f"a control was removed: {kept - now}"
    newly_hidden = [e for e in after.iter() if e.get("hidden") is not None]
    for element in newly_hidden:
        marks = {"data-noise-more", "data-noise-lazy", "data-noise-slow"} & set(element.attrib)
        assert marks, f"{element.tag!r} hidden with nothing to reveal it"
        revealer = {"data-noise-more": "[data-noise-load]", "data-noise-lazy": "[data-noise-sentinel]",
                    "data-noise-slow": "[data-noise-spinner]"}[marks.pop()]
        assert after.cssselect(revealer), f"hidden rows or controls with no {revealer} to reveal them"
    text = after.text_content()
    assert all(shown in text or shown in first.html for shown in first.shows), "what shows it is on the page"


def test_kinds_fire_only_where_the_page_has_what_they_act_on() -> None:
    short = "<html><body><main><p>Nothing here</p></main></body></html>"
    assert dress("load_more", short, 0.1) is None and dress("lazy_rows", short, 0.1) is None
    assert dress("slow_control", short, 0.1) is None and dress("label_variation", short, 0.1) is None
    assert dress("consent_banner", short, 0.1) is not None


def test_label_variation_varies_with_the_draw_and_swaps_columns() -> None:
    page = ("<html><body><table><tr><th>Number</th><th>Status</th><th>Amount</th></tr>"
            "<tr><td>1</td><td>open</td><td>3.00</td></tr></table><button>Save status</button></body></html>")
    low, high = dress("label_variation", page, 0.0), dress("label_variation", page, 0.99)
    assert low is not None and high is not None
    assert "Update status" in low.shows and "Update status" in high.shows, "a verb has one synonym here"
    whole = page.replace("Save status", "Save")
    variants = [dress("label_variation", whole, c) for c in (0.0, 0.99)]
    assert [v.shows[0] for v in variants if v is not None] == ["Update", "Apply changes"]
    headers = [th.text for th in _document(low.html).iter("th")]
    assert headers == ["No.", "Value", "State"], headers
    assert [td.text for td in _document(low.html).iter("td")] == ["1", "3.00", "open"]


@given(path=st.sampled_from(["/helpdesk/tickets", "/ledger/entries/4"]),
       query=st.lists(st.tuples(st.sampled_from(["q", "status", "page"]), st.text(max_size=8)), max_size=3))
def test_signing_in_again_asks_for_the_same_page_and_query(path: str, query: list[tuple[str, str]]) -> None:
    sent = urlencode(query)
    expired = _document(session_expired_page(path, sent))
    (link,) = [a for a in expired.iter("a")]
    assert link.text == "Sign in again" and link.get("href") == (f"{path}?{sent}" if sent else path)


def test_draws_are_fixed_by_their_inputs_and_a_kind_for_one_page_fires_there_only() -> None:
    runs = [[drawn("layout_shift", 7, "t@1", 1, n) for n in range(1, 40)] for _ in range(2)]
    assert runs[0] == runs[1] and any(runs[0]) and not all(runs[0])
    assert [n for n in range(1, 10) if drawn("interstitial", 0, "t@1", 1, n)] == [2]
    assert [n for n in range(1, 10) if drawn("session_timeout", 3, "t@2", 2, n)] == [3]


def test_noise_kinds_are_read_from_the_option_and_bad_ones_named() -> None:
    assert parse_noise_kinds("consent_banner, load_more") == ["consent_banner", "load_more"]
    with pytest.raises(ValueError, match="unknown noise kind 'cookies'"):
        parse_noise_kinds("cookies")
    with pytest.raises(ValueError, match="load_more given twice"):
        parse_noise_kinds("load_more,load_more")


def _page(ordinal: int, action: int | None, fired: bool, shows: str = "Quick survey") -> NoisePage:
    return NoisePage(ordinal=ordinal, action=action, path="/p", drawn=fired, fired=fired,
                     shows=[shows] if fired else [])


def _transcript(first: str, *observations: str) -> AgentTranscript:
    call: dict[str, Any] = {"latency_s": 0.0, "model": None, "system_fingerprint": None, "finish_reason": None,
                            "prompt_tokens": None, "completion_tokens": None, "content": None, "tool_calls": [],
                            "prompt_tokens_estimated": 0, "request_sha256": ""}
    steps = [Step.model_validate({"number": n, "call": call, "action": None, "rejection": None, "note": "",
                                  "observation": text}) for n, text in enumerate(observations, start=1)]
    return AgentTranscript(system_prompt="", instruction="", tool_mode="text", first_observation=first, steps=steps)


def test_a_fired_page_is_seen_only_in_the_observations_between_its_action_and_the_next_page() -> None:
    log = NoiseLog(arm="interstitial", run_seed=0, task_id="t", repetition=1,
                   pages=[_page(1, 0, False), _page(2, 2, True), _page(3, 4, True)])
    # the survey shows after action 3 (page 2's window: actions 2 and 3), page 3's only after its window closed
    transcript = _transcript("start", "a", "b", "Quick survey", "c", "Quick survey")
    assert seen_pages(log, transcript) == [2, 3]
    unseen = _transcript("start", "a", "b", "c", "d", "e")
    assert seen_pages(log, unseen) == []


def test_a_noise_run_plans_each_trial_clean_and_per_kind_paired_and_counterbalanced() -> None:
    plan = plan_episodes(["a@1", "b@1"], EndpointConfig(kind="scripted", policies=["oracle"]),
                         noise=["consent_banner", "load_more"])
    arms = [(p.task_id, (p.studies or {})["page_noise"]) for p in plan]
    assert arms == [("a@1", "clean"), ("a@1", "consent_banner"), ("a@1", "load_more"),
                    ("b@1", "consent_banner"), ("b@1", "load_more"), ("b@1", "clean")]
    assert {p.pair for p in plan if p.task_id == "a@1"} == {"a@1"}


def _record(arm: str, pair: str, outcome: str) -> EpisodeRecord:
    entry = NoiseEntry(arm=arm, pair=pair, pages=3, fired=[1] if arm != "clean" else [], seen=[])
    fields: dict[str, Any] = {"episode_id": f"{pair}-{arm}", "outcome": outcome, "steps": 5,
                              "studies": {"page_noise": entry.model_dump(mode="json")}}
    return EpisodeRecord.model_construct(**fields)  # only what the noise report reads


def test_the_report_gives_each_arm_its_own_row_and_pairs_with_the_clean_twin() -> None:
    rows = [_record("clean", "p1", "verified_success"), _record("load_more", "p1", "false_completion"),
            _record("clean", "p2", "verified_success"), _record("consent_banner", "p2", "verified_success")]
    report = noise_report(rows)
    assert report is not None
    by_arm = {row.arm: row for row in report.arms}
    assert list(by_arm) == ["clean", "load_more", "consent_banner"]
    assert by_arm["load_more"].false_completion.numerator == 1 and by_arm["load_more"].paired_success_change == -1
    assert by_arm["consent_banner"].paired_success_change == 0 and by_arm["clean"].paired_success_change is None


def test_verify_names_a_log_of_another_arm_or_episode_and_pages_out_of_order() -> None:
    from computerops.runs.config import PlannedEpisode, RunConfig
    from computerops.studies.base import EpisodeSetup
    from computerops.studies.page_noise import PageNoise
    from tasks import load_catalog

    task = load_catalog()["helpdesk.solve-ticket@1"]
    planned = PlannedEpisode(episode_id="001", task_id=task.id, policy="oracle", studies={"page_noise": "interstitial"})
    config = RunConfig(run_id="r", tasks=[task.id], endpoint=EndpointConfig(kind="scripted", policies=["oracle"]),
                       episodes=[planned])
    setup = EpisodeSetup(config, task, planned)
    honest = NoiseLog(arm="interstitial", run_seed=0, task_id=task.id, repetition=1,
                      pages=[_page(1, 0, False), _page(2, 1, True)])
    study = PageNoise()
    assert study.problems(setup, honest) == []
    assert study.problems(setup, honest.model_copy(update={"arm": "clean"})) == [
        "noise.json: arm clean, planned interstitial", "noise.json: page 2 recorded drawn=True, the draw says False"]
    other = honest.model_copy(update={"repetition": 2})
    assert study.problems(setup, other) == [
        f"noise.json: written for {task.id} repetition 2 seed 0, not this episode's"]
    skipped = honest.model_copy(update={"pages": [_page(2, 1, True)]})
    assert "noise.json: page 1 numbered 2" in study.problems(setup, skipped)
