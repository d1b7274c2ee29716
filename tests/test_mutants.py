"""Mutant generation, pure: which variants of a scripted control the audit makes, from the control and its run."""

from __future__ import annotations

from adapter.actions import Done
from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript, Step
from computerops.audit import effect_of
from computerops.mutants import (
    ScriptedRun,
    browser_mutants,
    neighbour_ids,
    neighbour_page,
    side_trips,
    value_perturbations,
)
from replays import RecordedEpisode
from sites.kit.records import JournalEntry, Operation
from tasks.spec import ScriptedStep, TaskSpec
from verifier import Claim, judge

STEPS = [
    ScriptedStep(id="open-policy", action="click", role="link", name="Mail policy"),
    ScriptedStep(id="back", action="click", role="link", name="Inbox"),
    ScriptedStep(id="open-invoice", action="click", role="link", name="Invoice INV-4502"),
    ScriptedStep(id="choose", action="select", role="combobox", name="Folder", option="Archive"),
    ScriptedStep(id="note", action="fill", role="textbox", name="Note", text="Paid 49.90 EUR for INV-4502"),
    ScriptedStep(id="send", action="click", role="button", name="Send"),
    ScriptedStep(id="finish", action="done", success=True, message="Sent."),
]
PAGES = {0: "/webmail/", 1: "/webmail/policy", 2: "/webmail/", 3: "/webmail/messages/5"}


def operation(seq: int, action: int, method: str, path: str, rows: int = 0) -> Operation:
    return Operation(seq=seq, action=action, method=method, path=path, query="", content_type=None, body="",
                     status=303 if method == "POST" else 200, location=None, response_digest="0" * 64,
                     journal_rows=rows)


def scripted_run() -> ScriptedRun:
    ops = [operation(n + 1, action, "GET", path) for n, (action, path) in enumerate(PAGES.items())]
    ops += [operation(5, 6, "POST", "/webmail/messages/5/forward", 1), operation(6, 6, "GET", "/webmail/sent")]
    journal = [JournalEntry(seq=1, operation=5, logical_time=5, table="message", key={"id": 20}, change="insert",
                            before=None, after={"id": 20, "sent_at": "2026-03-02 09:05", "body": "x"})]
    call = ModelCall(latency_s=0, model="m", system_fingerprint=None, finish_reason=None, prompt_tokens=None,
                     completion_tokens=None, content=None, tool_calls=[], prompt_tokens_estimated=0,
                     request_sha256="0")
    observation = '[4] combobox "Folder" value="Inbox" options=["Inbox", "Archive", "Spam"]'
    steps = [Step(number=n, call=call, action={}, rejection=None, note="", observation=observation)
             for n in range(1, len(STEPS))]
    transcript = AgentTranscript(system_prompt="", instruction="", tool_mode="auto", first_observation="",
                                 steps=steps, finish=Done(success=True, message="Sent."), stop_reason="finish")
    spec = TaskSpec(id="t.x", site="webmail", title="t", family="f", instruction="i", start_path="/webmail/",
                    expected_state=[], required_procedure=[{"kind": "visited", "name": "v", "path": "/x"}],
                    scripted_control=STEPS)
    verdict = judge(spec, "0", state={}, journal=journal, operations=ops, claim=Claim(success=True))
    return ScriptedRun(steps=STEPS, transcript=transcript,
                       evidence=RecordedEpisode(episode_id="e", operations=ops, journal=journal, final_state={},
                                                verdict=verdict))


def test_every_operator_makes_its_mutants_from_the_control_and_its_run() -> None:
    run = scripted_run()
    mutants = {m.id: m for m in browser_mutants(run)}
    assert {f"drop:{s.id}" for s in STEPS[:-1]} <= set(mutants)
    assert "duplicate:send" in mutants and "sibling:send" in mutants
    duplicate = mutants["duplicate:send"].steps
    assert duplicate is not None and [s.action for s in duplicate][6:10] == ["navigate", "select", "fill", "click"]
    sibling = mutants["sibling:send"].steps
    assert sibling is not None and sibling[6].url == "/webmail/messages/6"
    # The policy page is a side trip (Inbox brings the browser back), so reading it late leaves the rest intact.
    assert list(side_trips(run, 5)) == [(0, 1)]
    late = mutants["late-read:open-policy"].steps
    assert late is not None and [s.url for s in late if s.action == "navigate"] == ["/webmail/policy"]
    assert late[-1].action == "done" and late[-2].url == "/webmail/policy"
    assert mutants["perturb:choose:option"].steps[3].option == "Spam"  # type: ignore[index]
    assert mutants["perturb:open-invoice:next-id"].steps[2].name == "Invoice INV-4503"  # type: ignore[index]
    assert {"perturb:note:next-id", "perturb:note:cent-up", "perturb:note:cent-down", "perturb:note:case",
            "perturb:note:space"} <= set(mutants)
    assert all(m.steps is not None and m.steps[-1] == STEPS[-1] for m in mutants.values())


def test_value_perturbations_change_each_kind_of_value_by_a_little() -> None:
    assert dict(value_perturbations("2026-02-20")) == {"day-later": "2026-02-21", "day-earlier": "2026-02-19",
                                                       "space": "  2026-02-20 "}
    assert dict(value_perturbations("49.90"))["cent-up"] == "49.91"
    assert dict(value_perturbations("49,90"))["cent-down"] == "49,89"
    assert dict(value_perturbations("40"))["unit-down"] == "39"
    assert dict(value_perturbations("ap@example.com"))["other-address"] == "aps@example.com"
    assert neighbour_ids("order O-1042 and O-7") == "order O-1043 and O-7" and neighbour_ids("no id") is None
    assert neighbour_ids("/ledger/events/EV-099") == "/ledger/events/EV-100"
    assert neighbour_page("/webmail/messages/5?x=1") == "/webmail/messages/6?x=1" and neighbour_page("/a/b") is None


def test_an_effect_covers_the_reference_when_only_clock_times_generated_ids_and_extra_reads_differ() -> None:
    run = scripted_run()
    claim = Claim(success=True)
    reference = effect_of(run.evidence, claim)
    later = run.evidence.journal[0].model_copy(update={"after": {"id": 20, "sent_at": "2026-03-02 09:17",
                                                                  "body": "x"}})
    extra_read = [*run.evidence.operations, operation(7, 6, "GET", "/webmail/policy")]
    shifted = RecordedEpisode(episode_id="e", operations=extra_read, journal=[later], final_state={},
                              verdict=run.evidence.verdict)
    assert effect_of(shifted, claim).covers(reference)
    changed = later.model_copy(update={"after": {"id": 20, "sent_at": "2026-03-02 09:17", "body": "y"}})
    other = RecordedEpisode(episode_id="e", operations=extra_read, journal=[changed], final_state={},
                            verdict=run.evidence.verdict)
    assert not effect_of(other, claim).covers(reference)
    unread = [op for op in run.evidence.operations if op.path != "/webmail/policy"]
    skipped = RecordedEpisode(episode_id="e", operations=unread, journal=run.evidence.journal, final_state={},
                              verdict=run.evidence.verdict)
    assert not effect_of(skipped, claim).covers(reference)  # a page read before the write is missing
    assert not effect_of(run.evidence, Claim(success=False)).covers(reference)  # another answer
