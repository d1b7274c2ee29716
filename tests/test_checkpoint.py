"""The checkpoint contract (computerops/persistence/checkpoint.py): written canonical and durable, read back only
unaltered (any one byte changed is refused), resumed only under the same manifest (the first difference named)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import examples

from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript
from computerops.core.hashing import canonical_json
from computerops.persistence.checkpoint import (
    Checkpoint,
    CheckpointRefused,
    Constraints,
    Conversation,
    Ledgers,
    PendingAction,
    ResumeManifest,
    WindowEntry,
    latest_checkpoint,
    manifest_refusal,
    read_checkpoint,
    write_checkpoint,
)
from sites.kit.broker import Grant
from sites.kit.ledgers import ApprovalRecord, CompletedEffect, Money, UnfinishedWork


def manifest(**changes: object) -> ResumeManifest:
    base = ResumeManifest(run_id="run-1", episode_id="001-helpdesk.refund-with-approval@1", task_sha256="a" * 64,
                          model="scripted:oracle", protocol_sha256={"tool_schemas": "b" * 64},
                          code_sha256={"adapter": "c" * 64}, policies={"recovery": "reconcile"})
    return base.model_copy(update=changes)


def checkpoint(number: int = 4) -> Checkpoint:
    transcript = AgentTranscript(system_prompt="system", instruction="Refund O-1042", tool_mode="auto",
                                 first_observation="Page: Helpdesk")
    call = ModelCall(latency_s=0.1, model="scripted:oracle", system_fingerprint=None, finish_reason="tool_calls",
                     prompt_tokens=10, completion_tokens=5, content=None, tool_calls=[], prompt_tokens_estimated=10,
                     request_sha256="d" * 64)
    return Checkpoint(
        run_id="run-1", episode_id="001-helpdesk.refund-with-approval@1", number=number, trigger="before_effect",
        process=1, manifest=manifest(), manifest_sha256="",
        ledgers=Ledgers(
            constraints=Constraints(grants=[Grant.model_validate(
                {"id": "kettle-refund", "capability": "refund", "table": "order", "objects": [2],
                 "limit": {"cents": 4990, "currency": "EUR"}})]),
            approvals=[ApprovalRecord(id="RA-12", approver="Sam Patel", object="order:2", action="refund",
                                      amount=Money(cents=4990, currency="EUR"), policy_version="2026-03",
                                      expires_at="2026-04-01 00:00", status="active")],
            completed_effects=[CompletedEffect(table="refund", key={"id": 1}, operation=9, action=8,
                                               idempotency_key="action-8")],
            unfinished_work=[UnfinishedWork(id="FU-6", kind="notify-customer", description="Tell Dana",
                                            status="open")]),
        as_of_operation=9,
        conversation=Conversation(transcript=transcript, entries=[WindowEntry(message={"role": "system",
                                                                                          "content": "system"})],
                                  budget=30000, overhead=800, scale=1.0, mode="auto", next_number=8, elapsed_s=3.5,
                                  page_url="/helpdesk/orders/O-1042"),
        pending=PendingAction(number=8, action={"action": "click", "id": 12}, call=call, call_id="call_8",
                              echoed=True, idempotency_key="action-8"))


def test_a_written_checkpoint_reads_back_equal(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, checkpoint())
    assert path.name == "004.json" and latest_checkpoint(tmp_path) == path
    read = read_checkpoint(path)
    assert read == checkpoint().sealed()
    assert read.content_sha256 and read.manifest_sha256
    assert not list(tmp_path.glob("*.tmp"))


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_one_byte_altered_is_refused(tmp_path: Path, data: st.DataObject) -> None:
    path = write_checkpoint(tmp_path, checkpoint())
    raw = bytearray(path.read_bytes())
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    value = data.draw(st.integers(0, 255).filter(lambda b: b != raw[position]), label="byte")
    raw[position] = value
    altered = tmp_path / "altered" / "004.json"
    altered.parent.mkdir(exist_ok=True)
    altered.write_bytes(bytes(raw))
    with pytest.raises(CheckpointRefused, match=r"004\.json"):
        read_checkpoint(altered)


def test_a_consistent_rewrite_without_the_right_hash_is_refused(tmp_path: Path) -> None:
    """Changing a value and writing the file canonical again is still refused: the content hash no longer matches
    (the seed's mutant: an approval kept with its amount changed)."""
    sealed = checkpoint().sealed()
    approval = sealed.ledgers.approvals[0].model_copy(update={"amount": Money(cents=9990, currency="EUR")})
    forged = sealed.model_copy(update={"ledgers": sealed.ledgers.model_copy(update={"approvals": [approval]})})
    (tmp_path / "004.json").write_text(canonical_json(forged.model_dump(mode="json")), encoding="utf-8")
    with pytest.raises(CheckpointRefused, match="content hash"):
        read_checkpoint(tmp_path / "004.json")


@pytest.mark.parametrize(("field", "value", "named"), [
    ("model", "scripted:other", "model"),
    ("run_id", "run-2", "run_id"),
    ("protocol_sha256", {"tool_schemas": "e" * 64}, "protocol_sha256.tool_schemas"),
    ("policies", {"recovery": "retry-new-key"}, "policies.recovery"),
    ("code_sha256", {"adapter": "f" * 64}, "code_sha256.adapter"),
])
def test_a_resume_under_another_manifest_is_refused_naming_the_difference(field: str, value: object,
                                                                         named: str) -> None:
    sealed = checkpoint().sealed()
    assert manifest_refusal(sealed, manifest()) is None
    refusal = manifest_refusal(sealed, manifest(**{field: value}))
    assert refusal is not None and named in refusal and "refused" in refusal


def test_a_forgery_given_a_matching_content_hash_is_refused_by_its_seal(tmp_path: Path) -> None:
    """Whoever alters a checkpoint can compute its content hash again, but not its seal without the episode's key
    (the seed's mutant: the approval kept with another amount, then resealed)."""
    key = bytes(range(32))
    path = write_checkpoint(tmp_path, checkpoint(), key)
    assert read_checkpoint(path, key).seal
    sealed = read_checkpoint(path, key)
    approval = sealed.ledgers.approvals[0].model_copy(update={"amount": Money(cents=9990, currency="EUR")})
    forged = sealed.model_copy(update={"ledgers": sealed.ledgers.model_copy(update={"approvals": [approval]})})
    resealed = forged.sealed()  # the right content hash, no key
    (tmp_path / "004.json").write_text(canonical_json(resealed.model_dump(mode="json")), encoding="utf-8")
    assert read_checkpoint(path).ledgers.approvals[0].amount.cents == 9990  # the hashes alone do not tell
    with pytest.raises(CheckpointRefused, match="seal"):
        read_checkpoint(path, key)
    with pytest.raises(CheckpointRefused, match="seal"):
        read_checkpoint(write_checkpoint(tmp_path / "other", checkpoint(), bytes(32)), key)  # another key's
