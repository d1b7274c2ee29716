"""Blind tests of the long-running-agent mechanisms, written from their documented contract only
(docs/long-running.md, docs/architecture.md "Long-running episodes" and "One episode" step 3, and the public
docstrings of computerops/persistence/{checkpoint,compaction,metrics}.py and sites/kit/{idempotency,ledgers}.py).

Five classes: checkpoint integrity, manifest refusal, idempotency at the site (in process, through the ASGI app),
duplicate-effect counting and compaction judgement. The two defects they found (a reader that took any text reading
as the same checkpoint, and a checkpoint under another number's file name) are mended; their cases pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from tiers import FULL

from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript
from computerops.core.hashing import canonical_json
from computerops.core.vocabulary import IDEMPOTENCY_HEADER
from computerops.persistence.checkpoint import (
    Checkpoint,
    CheckpointRefused,
    Constraints,
    Conversation,
    Ledgers,
    PendingAction,
    ResumeManifest,
    WindowEntry,
    content_hash,
    manifest_refusal,
    read_checkpoint,
    seal_of,
    write_checkpoint,
)
from computerops.persistence.compaction import kept, ledger_lines, summary
from computerops.persistence.metrics import duplicate_effects
from sites.helpdesk import HELPDESK
from sites.kit import TENANT_HEADER, Tenant, TenantRegistry, create_app
from sites.kit.broker import Amount, Grant
from sites.kit.ledgers import ApprovalRecord, CompletedEffect, Money, UnfinishedWork
from sites.kit.records import JournalEntry, Operation
from tasks.spec import MutationRule

KEY = b"episode-one-checkpoint-key"
OTHER_KEY = b"episode-two-checkpoint-key"

# --------------------------------------------------------------------------------------------------------------------
# Objects
# --------------------------------------------------------------------------------------------------------------------


def manifest(episode: str = "ep-1") -> ResumeManifest:
    return ResumeManifest(run_id="run-1", episode_id=episode, task_sha256="a" * 64, model="gpt-x",
                          protocol_sha256={"system": "b" * 64, "actions": "c" * 64},
                          code_sha256={"adapter": "d" * 64, "sites": "e" * 64},
                          policies={"recovery": "reconcile", "checkpoint_every": "5"})


def grants() -> list[Grant]:
    return [Grant(id="refund-o1042", capability="refund", table="refund", objects=[1042],
                  limit=Amount(cents=4990, currency="EUR")),
            Grant(id="notify", capability="send", table="notification", recipients=["ana@example.com"])]


def approvals() -> list[ApprovalRecord]:
    return [ApprovalRecord(id="RA-12", approver="Maria Rossi", object="order:1042", action="refund",
                           amount=Money(cents=4990, currency="EUR"), policy_version="refunds-2026.1",
                           expires_at="2026-03-10 17:00", status="approved",
                           invalidated_by=["order.status", "order.total_cents", "order.currency"]),
            ApprovalRecord(id="RA-15", approver="Jun Park", object="order:1050", action="refund",
                           amount=Money(cents=1250, currency="USD"), policy_version="refunds-2026.1",
                           expires_at="2026-03-12 12:00", status="used")]


def effects() -> list[CompletedEffect]:
    return [CompletedEffect(table="refund", key={"id": 7}, operation=12, action=4, idempotency_key="action-4"),
            CompletedEffect(table="notification", key={"id": 3}, operation=15, action=6,
                            idempotency_key="action-6")]


def work() -> list[UnfinishedWork]:
    return [UnfinishedWork(id="FU-1", kind="notify-customer",
                           description="Tell the customer about the refund of O-1042", status="open"),
            UnfinishedWork(id="FU-2", kind="close-ticket", description="Close T-2002 — client prévenu", status="open")]


def ledgers() -> Ledgers:
    rules = [MutationRule(table="refund", change=["insert"]), MutationRule(table="notification", change=["insert"])]
    return Ledgers(constraints=Constraints(grants=grants(), allowed_mutations=rules), approvals=approvals(),
                   completed_effects=effects(), unfinished_work=work())


def transcript() -> AgentTranscript:
    return AgentTranscript(system_prompt="You are an agent.", instruction="Rembourse O-1042 — 49,90 € « vite »",
                           tool_mode="native", first_observation="Page: Bestellung Ü-1042 ✓")


def checkpoint(number: int = 2, episode: str = "ep-1", pending: bool = True) -> Checkpoint:
    call = ModelCall(latency_s=0.25, model="gpt-x", system_fingerprint=None, finish_reason="tool_calls",
                     prompt_tokens=100, completion_tokens=10, content="Je clique « Créditer »", tool_calls=[],
                     prompt_tokens_estimated=100, request_sha256="f" * 64)
    conversation = Conversation(
        transcript=transcript(),
        entries=[WindowEntry(message={"role": "user", "content": "Seite — Ü ✓"}, observation="obs é"),
                 WindowEntry(message={"role": "assistant", "content": "ok"}, rejected_reply=True, elided=True)],
        budget=30, overhead=12, scale=1.5, mode="native", next_number=5, elapsed_s=12.75,
        page_url="/helpdesk/orders/O-1042")
    action = PendingAction(number=5, action={"name": "click", "target": 17}, call=call, call_id="call-5",
                           echoed=False, idempotency_key="action-5")
    return Checkpoint(run_id="run-1", episode_id=episode, number=number,
                      trigger="before_effect" if pending else "every",
                      process=1, manifest=manifest(episode), manifest_sha256="", ledgers=ledgers(),
                      as_of_operation=15, conversation=conversation, pending=action if pending else None)


def written(tmp_path: Path, number: int = 2, episode: str = "ep-1", key: bytes = KEY) -> tuple[Path, bytes]:
    path = write_checkpoint(tmp_path, checkpoint(number, episode), key)
    return path, path.read_bytes()


def refused(path: Path, data: bytes, key: bytes | None = KEY) -> bool:
    """Whether the file holding `data` is refused (CheckpointRefused; any other exception fails the test)."""
    path.write_bytes(data)
    try:
        read_checkpoint(path, key)
    except CheckpointRefused:
        return True
    return False


# --------------------------------------------------------------------------------------------------------------------
# 1. Checkpoint integrity
#
# Promised (docs/long-running.md "The checkpoint contract", checkpoint.py docstrings): a file that is not exactly the
# canonical JSON of its content is refused (so byte flips, truncation, appended bytes, reformatting, key order,
# unicode escapes and duplicated keys are all refused: none of them is the canonical form); a content or manifest hash
# that does not match is refused; given the episode's key, a seal that does not match is refused (so an edit with the
# hashes recomputed, or a checkpoint of another episode sealed under its own key, is refused); an unknown format
# version is refused (Versioned). Not promised by the reader: that the file's name matches the checkpoint's number.
# --------------------------------------------------------------------------------------------------------------------


def test_an_untouched_checkpoint_reads_back_equal(tmp_path: Path) -> None:
    original = checkpoint().sealed(KEY)
    path = write_checkpoint(tmp_path, checkpoint(), KEY)
    back = read_checkpoint(path, KEY)
    assert back == original
    assert back.content_sha256 == content_hash(back) and back.seal == seal_of(KEY, back.content_sha256)
    assert path.read_bytes() == canonical_json(original).encode()


def test_an_untouched_checkpoint_without_a_pending_action_reads_back_equal(tmp_path: Path) -> None:
    path = write_checkpoint(tmp_path, checkpoint(pending=False), KEY)
    assert read_checkpoint(path, KEY) == checkpoint(pending=False).sealed(KEY)


def test_every_single_bit_flip_anywhere_is_refused(tmp_path: Path) -> None:
    path, data = written(tmp_path)
    accepted = []
    # Every position, the low bit or (alternately) bit 5, which turns a letter's case or a digit into another
    # character (the full run; the inner loop takes every 7th position).
    for position in range(0, len(data), 1 if FULL else 7):
        bit = 5 if position % 2 else 0
        altered = bytearray(data)
        altered[position] ^= 1 << bit
        if not refused(path, bytes(altered)):
            accepted.append((position, bit, data[max(0, position - 20):position + 20]))
    assert accepted == []


@given(st.data())
def test_any_byte_replaced_by_any_other_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                   data: st.DataObject) -> None:
    path, original = written(tmp_path_factory.mktemp("flip"))
    position = data.draw(st.integers(0, len(original) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != original[position]))
    altered = bytearray(original)
    altered[position] = value
    assert refused(path, bytes(altered))


def test_every_truncation_is_refused(tmp_path: Path) -> None:
    path, data = written(tmp_path)
    assert [length for length in range(0, len(data), 3 if FULL else 17) if not refused(path, data[:length])] == []


@pytest.mark.parametrize("tail", [b"\n", b" ", b"\r\n", b"\x00", b"{}", b"x", b"\xef\xbb\xbf", b"\t\n"],
                         ids=repr)
def test_appended_bytes_are_refused(tmp_path: Path, tail: bytes) -> None:
    path, data = written(tmp_path)
    assert refused(path, data + tail)


@pytest.mark.parametrize("head", [b"\xef\xbb\xbf", b" ", b"\n"], ids=repr)
def test_prepended_bytes_are_refused(tmp_path: Path, head: bytes) -> None:
    path, data = written(tmp_path)
    assert refused(path, head + data)


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


REFORMATS: dict[str, Callable[[Any], str]] = {
    "indented": lambda doc: json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False),
    "spaced separators": lambda doc: json.dumps(doc, sort_keys=True, ensure_ascii=False),
    "keys reversed": lambda doc: json.dumps(_reversed_keys(doc), separators=(",", ":"), ensure_ascii=False),
    "keys unsorted (insertion order)": lambda doc: json.dumps(
        {k: doc[k] for k in sorted(doc, key=len)}, separators=(",", ":"), ensure_ascii=False),
    "ascii escapes": lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True),
    "one escaped ascii letter": lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                                       ensure_ascii=False).replace('"run-1"', '"\\u0072un-1"', 1),
    "escaped slash": lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                            ensure_ascii=False).replace("/helpdesk/", "\\/helpdesk\\/", 1),
    "float written otherwise": lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                                      ensure_ascii=False).replace('"scale":1.5', '"scale":1.50', 1),
    "float in exponent form": lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                                     ensure_ascii=False).replace('"scale":1.5', '"scale":15e-1', 1),
}


@pytest.mark.parametrize("name", list(REFORMATS))
def test_the_same_json_written_otherwise_is_refused(tmp_path: Path, name: str) -> None:
    path, data = written(tmp_path)
    document = json.loads(data)
    text = REFORMATS[name](document)
    assert json.loads(text) == document and text.encode() != data  # the same content, another text
    assert refused(path, text.encode())


@pytest.mark.parametrize("field", ["as_of_operation", "number", "episode_id", "trigger"])
def test_a_duplicated_json_key_is_refused(tmp_path: Path, field: str) -> None:
    path, data = written(tmp_path)
    document = json.loads(data)
    duplicate = f'"{field}":{json.dumps(document[field])},'.encode()
    altered = b"{" + duplicate + data[1:]  # same value twice: json.loads gives back the same object
    assert json.loads(altered) == document
    assert refused(path, altered)


def test_a_duplicated_key_whose_first_value_differs_is_refused(tmp_path: Path) -> None:
    path, data = written(tmp_path)
    altered = b'{"as_of_operation":99,' + data[1:]
    assert refused(path, altered)


def _resealed(data: bytes, change: Callable[[dict[str, Any]], None], key: bytes | None,
              manifest_hash: bool = True) -> bytes:
    """The checkpoint with one field changed, its content hash (and manifest hash) recomputed, and sealed under `key`
    (or with the old seal kept when `key` is None): canonical, so only the hashes and the seal can refuse it."""
    document = json.loads(data)
    change(document)
    old_seal = document["seal"]
    changed = Checkpoint.model_validate(document)
    if manifest_hash:
        changed = changed.model_copy(update={"manifest_sha256": Checkpoint.model_validate(
            {**document, "manifest_sha256": ""}).sealed(None).manifest_sha256})
    changed = changed.model_copy(update={"content_sha256": content_hash(changed)})
    seal = old_seal if key is None else seal_of(key, changed.content_sha256)
    return canonical_json(changed.model_copy(update={"seal": seal})).encode()


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "as_of_operation": lambda d: d.update(as_of_operation=d["as_of_operation"] + 1),
    "approval amount": lambda d: d["ledgers"]["approvals"][0]["amount"].update(cents=9990),
    "approval currency": lambda d: d["ledgers"]["approvals"][0]["amount"].update(currency="USD"),
    "grant limit": lambda d: d["ledgers"]["constraints"]["grants"][0]["limit"].update(cents=999999),
    "effect dropped": lambda d: d["ledgers"]["completed_effects"].pop(),
    "work dropped": lambda d: d["ledgers"]["unfinished_work"].pop(0),
    "pending key": lambda d: d["pending"].update(idempotency_key="action-6"),
    "pending removed": lambda d: d.update(pending=None),
    "trigger": lambda d: d.update(trigger="every"),
    "page": lambda d: d["conversation"].update(page_url="/helpdesk/"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_with_the_hashes_recomputed_but_no_seal_key_is_refused(tmp_path: Path, edit: str) -> None:
    path, data = written(tmp_path)
    kept_seal = _resealed(data, EDITS[edit], key=None)
    assert refused(path, kept_seal)
    wrong_key = _resealed(data, EDITS[edit], key=OTHER_KEY)
    assert refused(path, wrong_key)
    def unseal(document: dict[str, Any]) -> None:
        EDITS[edit](document)
        document["seal"] = ""

    unsealed = _resealed(data, unseal, key=None)
    assert refused(path, unsealed)


def test_the_recomputation_helper_alone_is_accepted_with_the_right_key(tmp_path: Path) -> None:
    """Control for the test above: the same edit sealed with the episode's key reads (the refusals are the seal's)."""
    path, data = written(tmp_path)
    path.write_bytes(_resealed(data, EDITS["as_of_operation"], key=KEY))
    assert read_checkpoint(path, KEY).as_of_operation == 16


def test_a_manifest_edit_with_content_hash_and_seal_recomputed_but_stale_manifest_hash_is_refused(
        tmp_path: Path) -> None:
    path, data = written(tmp_path)
    altered = _resealed(data, lambda d: d["manifest"].update(model="gpt-y"), key=KEY, manifest_hash=False)
    assert json.loads(altered)["manifest_sha256"] == json.loads(data)["manifest_sha256"]
    assert refused(path, altered)


def test_a_sealed_checkpoint_reads_without_a_key(tmp_path: Path) -> None:
    path, _ = written(tmp_path)
    assert read_checkpoint(path, None) == checkpoint().sealed(KEY)


@pytest.mark.parametrize("field", ["content_sha256", "manifest_sha256"])
def test_a_hash_written_in_upper_case_and_resealed_is_refused(tmp_path: Path, field: str) -> None:
    path, data = written(tmp_path)
    document = json.loads(data)
    document[field] = document[field].upper()
    document["seal"] = seal_of(KEY, document["content_sha256"])
    assert refused(path, canonical_json(document).encode())


def test_a_checkpoint_of_another_episode_is_refused_under_this_episodes_key(tmp_path: Path) -> None:
    _, data = written(tmp_path / "other", episode="ep-2", key=OTHER_KEY)
    mine = tmp_path / "mine"
    mine.mkdir()
    assert refused(mine / "002.json", data, KEY)


def test_an_unsealed_checkpoint_is_refused_when_read_with_the_key(tmp_path: Path) -> None:
    path, _ = written(tmp_path, key=b"")
    assert refused(path, write_checkpoint(tmp_path, checkpoint()).read_bytes(), KEY)


def test_a_checkpoint_of_another_episode_under_the_same_key_is_refused_by_its_manifest(tmp_path: Path) -> None:
    """Even should two episodes share a key, a resume checks the manifest: the episode id is named."""
    path = write_checkpoint(tmp_path, checkpoint(episode="ep-2"), KEY)
    refusal = manifest_refusal(read_checkpoint(path, KEY), manifest("ep-1"))
    assert refusal is not None and "episode_id" in refusal


def test_a_checkpoint_copied_to_another_number_is_refused(tmp_path: Path) -> None:
    _, data = written(tmp_path, number=2)
    assert refused(tmp_path / "001.json", data)


@pytest.mark.parametrize("version", ["computerops.checkpoint/2", "computerops.checkpoint/0", "computerops.checkpoint",
                                     "computerops.transcript/1"])
def test_an_unknown_format_version_is_refused_even_when_hashed_and_sealed(tmp_path: Path, version: str) -> None:
    path, data = written(tmp_path)
    document = json.loads(data)

    def hashed(doc: dict[str, Any]) -> str:  # the content hash: of the canonical JSON of every other field
        return hashlib.sha256(canonical_json({k: v for k, v in doc.items()
                                              if k not in ("content_sha256", "seal")}).encode()).hexdigest()

    assert hashed(document) == document["content_sha256"]  # control: this is how the writer hashes
    document["format"] = version
    document["content_sha256"] = hashed(document)
    document["seal"] = seal_of(KEY, document["content_sha256"])
    assert refused(path, canonical_json(document).encode())


LAX_FORMS: dict[str, Callable[[dict[str, Any]], None]] = {
    "int as float (as_of_operation 15.0)": lambda d: d.update(as_of_operation=15.0),
    "int as string (as_of_operation '15')": lambda d: d.update(as_of_operation="15"),
    "money cents as string ('4990')": lambda d: d["ledgers"]["approvals"][0]["amount"].update(cents="4990"),
    "int as bool (process true)": lambda d: d.update(process=True),
    "bool as string (echoed 'false')": lambda d: d["pending"].update(echoed="false"),
    "bool as int (echoed 0)": lambda d: d["pending"].update(echoed=0),
    "float as string (scale '1.5')": lambda d: d["conversation"].update(scale="1.5"),
    "format field dropped": lambda d: d.pop("format"),
    "defaulted field dropped (authoritative_status)":
        lambda d: d["ledgers"]["completed_effects"][0].pop("authoritative_status"),
    "defaulted field dropped (transcript steps)": lambda d: d["conversation"]["transcript"].pop("steps"),
    "excluded field written as null (compaction)": lambda d: d.update(compaction=None),
}


@pytest.mark.parametrize("form", list(LAX_FORMS))
def test_a_canonical_text_of_another_json_value_that_validates_to_the_same_checkpoint_is_refused(
        tmp_path: Path, form: str) -> None:
    path, data = written(tmp_path)
    document = json.loads(data)
    LAX_FORMS[form](document)
    text = canonical_json(document).encode()
    assert text != data
    assert refused(path, text)


@pytest.mark.parametrize("data", [b"", b"null", b"[]", b"{}", b"\xff\xfe", b'"x"', b"1"], ids=repr)
def test_a_file_that_is_not_a_checkpoint_is_refused_as_such(tmp_path: Path, data: bytes) -> None:
    assert refused(tmp_path / "001.json", data)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointRefused):
        read_checkpoint(tmp_path / "001.json", KEY)


# --------------------------------------------------------------------------------------------------------------------
# 2. Manifest refusal: the first differing field named (nested: `code_sha256.sites`), None when equal, key order no
# difference.
# --------------------------------------------------------------------------------------------------------------------

MANIFEST_CHANGES: dict[str, tuple[str, dict[str, Any]]] = {
    "run_id": ("run_id", {"run_id": "run-2"}),
    "episode_id": ("episode_id", {"episode_id": "ep-9"}),
    "task_sha256": ("task_sha256", {"task_sha256": "a" * 63 + "b"}),
    "model": ("model", {"model": "gpt-y"}),
    "model trailing space": ("model", {"model": "gpt-x "}),
    "model case": ("model", {"model": "GPT-X"}),
    "model nfd": ("model", {"model": "gpt-xe\u0301"}),
    "protocol value": ("protocol_sha256.system", {"protocol_sha256": {"system": "0" * 64, "actions": "c" * 64}}),
    "protocol key added": ("protocol_sha256", {"protocol_sha256": {"system": "b" * 64, "actions": "c" * 64,
                                                                   "finish": "1" * 64}}),
    "protocol key removed": ("protocol_sha256", {"protocol_sha256": {"system": "b" * 64}}),
    "protocol key renamed": ("protocol_sha256", {"protocol_sha256": {"System": "b" * 64, "actions": "c" * 64}}),
    "code value": ("code_sha256.sites", {"code_sha256": {"adapter": "d" * 64, "sites": "9" * 64}}),
    "code emptied": ("code_sha256", {"code_sha256": {}}),
    "recovery policy": ("policies.recovery", {"policies": {"recovery": "forget", "checkpoint_every": "5"}}),
    "checkpoint every": ("policies.checkpoint_every", {"policies": {"recovery": "reconcile",
                                                                    "checkpoint_every": "05"}}),
    "policy added": ("policies", {"policies": {"recovery": "reconcile", "checkpoint_every": "5",
                                               "compaction": "ledgers/1"}}),
    "policy removed": ("policies", {"policies": {"recovery": "reconcile"}}),
}


MANIFEST_FIELDS = tuple(ResumeManifest.model_fields)


def named(refusal: str) -> str:
    """The manifest field a refusal names (`code_sha256.sites: '3f2a…' recorded, '9c1b…' now`)."""
    for found in re.findall(r"([A-Za-z_]\w*(?:\.[^\s:]+)?): ", refusal):
        if found.split(".")[0] in MANIFEST_FIELDS:
            return str(found)
    raise AssertionError(f"no manifest field named in {refusal!r}")


@pytest.mark.parametrize("change", list(MANIFEST_CHANGES))
def test_a_single_manifest_change_is_refused_naming_it(change: str) -> None:
    name, update = MANIFEST_CHANGES[change]
    now = manifest().model_copy(update=update)
    refusal = manifest_refusal(checkpoint().sealed(KEY), now)
    assert refusal is not None
    assert named(refusal) == name or named(refusal).startswith(name + "."), refusal


def test_an_identical_manifest_is_accepted() -> None:
    assert manifest_refusal(checkpoint().sealed(KEY), manifest()) is None


def test_manifest_key_order_is_no_difference() -> None:
    base = manifest()
    now = ResumeManifest(policies=dict(reversed(base.policies.items())),
                         code_sha256=dict(reversed(base.code_sha256.items())),
                         protocol_sha256=dict(reversed(base.protocol_sha256.items())),
                         model=base.model, task_sha256=base.task_sha256, episode_id=base.episode_id,
                         run_id=base.run_id)
    assert manifest_refusal(checkpoint().sealed(KEY), now) is None


@given(st.dictionaries(st.sampled_from(["model", "task_sha256", "run_id", "episode_id"]),
                       st.text(min_size=1, max_size=8), min_size=1))
def test_any_changed_manifest_scalars_are_refused_naming_a_changed_one(update: dict[str, str]) -> None:
    base = manifest()
    now = base.model_copy(update=update)
    changed = [name for name in update if getattr(now, name) != getattr(base, name)]
    refusal = manifest_refusal(checkpoint().sealed(KEY), now)
    if not changed:
        assert refusal is None
    else:
        assert refusal is not None and named(refusal) in changed, refusal


# --------------------------------------------------------------------------------------------------------------------
# 3. Idempotency at the site: an in-process helpdesk tenant, driven through the ASGI app with raw headers.
# --------------------------------------------------------------------------------------------------------------------

CREDIT = "/helpdesk/orders/O-1042/credits"
NOTIFY = "/helpdesk/tickets/T-2002/notify"
FORM = "application/x-www-form-urlencoded"
CREDIT_BODY = b"credit_amount=1.00&credit_reason=sorry"
NOTIFY_BODY = b"subject=Your+order&message=It+is+on+its+way."


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
    registry = TenantRegistry(Path(tmp_path_factory.mktemp("helpdesk")), sites={HELPDESK.name: HELPDESK})
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def app_client(registry: TenantRegistry) -> Iterator[TestClient]:
    with TestClient(create_app(registry), follow_redirects=False) as client:
        yield client


@pytest.fixture
def tenant(registry: TenantRegistry) -> Iterator[Tenant]:
    tenant = registry.create(HELPDESK.name, 1)
    yield tenant
    registry.drop(tenant)


class Reply:
    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def same(self) -> tuple[int, bytes | None, bytes | None, bytes]:
        return self.status, self.header(b"location"), self.header(b"content-type"), self.body


class Site:
    """Raw ASGI requests to the app (in process), so header bytes the HTTP client would refuse still reach it."""

    def __init__(self, client: TestClient, tenant: Tenant) -> None:
        self.app, self.tenant = client.app, tenant

    def send(self, path: str, body: bytes = CREDIT_BODY, key: bytes | None = b"action-1", method: str = "POST",
             query: bytes = b"", content_type: bytes | None = FORM.encode(), raw_path: bytes | None = None,
             extra: list[tuple[bytes, bytes]] | None = None) -> Reply:
        headers = [(b"host", b"testserver"), (TENANT_HEADER.lower().encode(), self.tenant.token.encode()),
                   (b"content-length", str(len(body)).encode())]
        if content_type is not None:
            headers.append((b"content-type", content_type))
        if key is not None:
            headers.append((IDEMPOTENCY_HEADER.lower().encode(), key))  # ASGI names are lower-case
        headers += extra or []
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": raw_path or path.encode(), "root_path": "",
                 "query_string": query, "headers": headers, "client": ("127.0.0.1", 5000),
                 "server": ("testserver", 80)}
        sent: list[dict[str, Any]] = []
        received = False

        async def receive() -> dict[str, Any]:
            nonlocal received
            if received:
                await asyncio.sleep(3600)
            received = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def call() -> None:
            await self.app(scope, receive, send)  # type: ignore[arg-type]

        asyncio.run(call())
        start = next(m for m in sent if m["type"] == "http.response.start")
        return Reply(start["status"], list(start.get("headers", [])),
                     b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))


@pytest.fixture
def site(app_client: TestClient, tenant: Tenant) -> Site:
    return Site(app_client, tenant)


def test_a_same_key_repeat_gets_the_committed_response_and_commits_nothing(site: Site) -> None:
    first = site.send(CREDIT)
    assert first.status == 303
    journal, state = site.tenant.journal(), site.tenant.snapshot()
    second = site.send(CREDIT)
    assert second.same() == first.same()
    assert site.tenant.journal() == journal and site.tenant.snapshot() == state
    one, two = site.tenant.operations()
    assert (one.idempotency_key, one.repeat_of, two.idempotency_key, two.repeat_of) == (
        "action-1", None, "action-1", one.seq)
    assert two.journal_rows == 0 and one.journal_rows > 0


def test_a_notification_repeat_sends_no_second_notification(site: Site) -> None:
    first = site.send(NOTIFY, NOTIFY_BODY, key=b"action-3")
    second = site.send(NOTIFY, NOTIFY_BODY, key=b"action-3")
    assert second.same() == first.same()
    assert [e.table for e in site.tenant.journal() if e.change == "insert"].count("notification") == 1


def test_every_repeat_names_the_committed_operation_not_the_previous_repeat(site: Site) -> None:
    replies = [site.send(CREDIT) for _ in range(4)]
    assert len({reply.same() for reply in replies}) == 1
    first, *repeats = site.tenant.operations()
    assert [op.repeat_of for op in repeats] == [first.seq] * 3


def _committed(site: Site) -> int:
    return sum(op.journal_rows for op in site.tenant.operations())


REQUEST_DIFFERENCES: dict[str, dict[str, Any]] = {
    "another key": {"key": b"action-2"},
    "another body": {"body": b"credit_amount=2.00&credit_reason=sorry"},
    "the same form with its fields in another order": {"body": b"credit_reason=sorry&credit_amount=1.00"},
    "the same form value encoded otherwise": {"body": b"credit_amount=1.00&credit_reason=sorr%79"},
    "another query": {"query": b"x=1"},
    "another path": {"path": "/helpdesk/orders/O-1041/credits"},
    "the same path sent otherwise": {"raw_path": b"/helpdesk/orders/O%2D1042/credits"},
    "another content type parameter": {"content_type": b"application/x-www-form-urlencoded; charset=utf-8"},
}


@pytest.mark.parametrize("difference", list(REQUEST_DIFFERENCES))
def test_a_request_that_differs_in_anything_runs_normally(site: Site, difference: str) -> None:
    site.send(CREDIT)
    before = _committed(site)
    change = dict(REQUEST_DIFFERENCES[difference])
    path = change.pop("path", CREDIT)
    reply = site.send(path, **change)
    last = site.tenant.operations()[-1]
    assert last.repeat_of is None
    assert reply.status == 303 and _committed(site) > before  # it ran and committed again


def test_a_repeat_after_the_state_changed_still_gets_the_committed_response(site: Site) -> None:
    first = site.send(CREDIT)
    site.send(CREDIT, b"credit_amount=2.00&credit_reason=more", key=b"action-2")
    journal = site.tenant.journal()
    assert site.send(CREDIT).same() == first.same()
    assert site.tenant.journal() == journal and site.tenant.operations()[-1].repeat_of == 1


def test_the_action_header_is_not_part_of_the_request(site: Site) -> None:
    first = site.send(CREDIT, extra=[(b"x-computerops-action", b"1")])
    second = site.send(CREDIT, extra=[(b"x-computerops-action", b"9")])
    assert second.same() == first.same() and site.tenant.operations()[-1].repeat_of == 1


@pytest.mark.parametrize("change", [{"path": CREDIT + "/"}, {"content_type": None}, {"body": CREDIT_BODY + b"&"},
                                    {"path": "/helpdesk/orders/o-1042/credits"}], ids=str)
def test_a_near_repeat_is_no_repeat(site: Site, change: dict[str, Any]) -> None:
    site.send(CREDIT)
    change = dict(change)
    site.send(change.pop("path", CREDIT), **change)
    assert site.tenant.operations()[-1].repeat_of is None


def test_another_method_under_the_key_is_no_repeat(site: Site) -> None:
    site.send(CREDIT)
    site.send(CREDIT, method="PUT")
    assert site.tenant.operations()[-1].repeat_of is None


def test_a_get_under_a_committed_key_runs_as_usual(site: Site) -> None:
    site.send(CREDIT)
    page = site.send("/helpdesk/orders/O-1042", body=b"", method="GET", content_type=None)
    assert page.status == 200 and site.tenant.operations()[-1].repeat_of is None


def test_a_key_whose_request_committed_nothing_can_be_reused(site: Site) -> None:
    bad = b"credit_amount=0.00&credit_reason=sorry"
    assert site.send(CREDIT, bad).status == 422
    again = site.send(CREDIT, bad)  # a retry of an attempt that committed nothing runs as usual
    assert again.status == 422 and site.tenant.operations()[-1].repeat_of is None
    assert site.send(CREDIT).status == 303 and _committed(site) > 0
    assert site.tenant.operations()[-1].repeat_of is None
    site.send(CREDIT)
    assert site.tenant.operations()[-1].repeat_of == site.tenant.operations()[-2].seq


def test_a_key_first_used_on_a_get_can_be_used_on_an_effect(site: Site) -> None:
    site.send("/helpdesk/orders/O-1042", body=b"", method="GET", content_type=None)
    assert site.send(CREDIT).status == 303 and _committed(site) > 0


def test_two_requests_of_one_action_on_different_paths_both_commit_and_repeat_apart(site: Site) -> None:
    credit = site.send(CREDIT, key=b"action-7")
    notify = site.send(NOTIFY, NOTIFY_BODY, key=b"action-7")
    first, second = site.tenant.operations()
    assert first.journal_rows > 0 and second.journal_rows > 0 and second.repeat_of is None
    assert site.send(NOTIFY, NOTIFY_BODY, key=b"action-7").same() == notify.same()
    assert site.send(CREDIT, key=b"action-7").same() == credit.same()
    assert [op.repeat_of for op in site.tenant.operations()[2:]] == [second.seq, first.seq]


@pytest.mark.parametrize("header", ["idempotency-key", "IDEMPOTENCY-KEY", "idempotency-KEY", "Idempotency-key"])
def test_the_header_name_is_case_insensitive_through_the_http_client(app_client: TestClient, tenant: Tenant,
                                                                     header: str) -> None:
    headers = {TENANT_HEADER: tenant.token}
    data = {"credit_amount": "1.00", "credit_reason": "sorry"}
    first = app_client.post(CREDIT, data=data, headers={**headers, IDEMPOTENCY_HEADER: "action-1"})
    second = app_client.post(CREDIT, data=data, headers={**headers, header: "action-1"})
    assert (second.status_code, second.headers.get("location"), second.content) == (
        first.status_code, first.headers.get("location"), first.content)
    assert [op.repeat_of for op in tenant.operations()] == [None, 1]
    assert [op.idempotency_key for op in tenant.operations()] == ["action-1", "action-1"]


VALID_KEYS = [b"a", b"action-1", b"x" * 128, bytes(range(0x21, 0x7F)), b'"quoted"', b"../../etc", b"k;drop-table--"]
INVALID_KEYS = [b"", b" ", b"a b", b"x" * 129, b"cl\xc3\xa9", b"cl\xe9", b"tab\there", b"del\x7f", b"nul\x00",
                b"action-1\r\nX-ComputerOps-Action: 5", b"action-1\nSet-Cookie: a=b", b"\xe2\x80\x8baction-1"]


@pytest.mark.parametrize("key", VALID_KEYS, ids=repr)
def test_a_valid_key_is_recorded_and_repeats(site: Site, key: bytes) -> None:
    first = site.send(CREDIT, key=key)
    second = site.send(CREDIT, key=key)
    assert first.status == 303 and second.same() == first.same()
    one, two = site.tenant.operations()
    assert one.idempotency_key == key.decode() and two.repeat_of == one.seq


@pytest.mark.parametrize("key", INVALID_KEYS, ids=repr)
def test_an_invalid_key_is_refused_with_400_and_nothing_done(site: Site, key: bytes) -> None:
    reply = site.send(CREDIT, key=key)
    assert reply.status == 400
    assert site.tenant.journal() == [] and all(op.journal_rows == 0 for op in site.tenant.operations())


def test_an_invalid_key_never_repeats_a_committed_one(site: Site) -> None:
    site.send(CREDIT, key=b"action-1")
    before = site.tenant.journal()
    reply = site.send(CREDIT, key=b"action-1 ")
    assert reply.status == 400 and site.tenant.journal() == before


def test_keys_are_per_tenant(registry: TenantRegistry, app_client: TestClient, site: Site) -> None:
    site.send(CREDIT)
    other = registry.create(HELPDESK.name, 1)
    try:
        Site(app_client, other).send(CREDIT)
        assert other.operations()[0].repeat_of is None and other.operations()[0].journal_rows > 0
    finally:
        registry.drop(other)


# --------------------------------------------------------------------------------------------------------------------
# 4. Duplicate-effect counting on synthetic evidence
# --------------------------------------------------------------------------------------------------------------------

EFFECT_TABLES = frozenset({"refund", "notification", "escalation"})


class Evidence:
    def __init__(self) -> None:
        self.operations: list[Operation] = []
        self.journal: list[JournalEntry] = []

    def op(self, key: str | None, body: str = "credit_amount=1.00", path: str = CREDIT, query: str = "",
           method: str = "POST", inserts: tuple[str, ...] = ("refund",), updates: tuple[str, ...] = (),
           repeat_of: int | None = None, status: int = 303) -> Operation:
        seq = len(self.operations) + 1
        rows = 0
        for table, change in [(t, "insert") for t in inserts] + [(t, "update") for t in updates]:
            row = {"id": len(self.journal) + 1}
            self.journal.append(JournalEntry(seq=len(self.journal) + 1, operation=seq, logical_time=seq, table=table,
                                             key=row, change=change,
                                             before=None if change == "insert" else row, after=row))
            rows += 1
        operation = Operation(seq=seq, action=seq, method=method, path=path, query=query, content_type=FORM, body=body,
                              status=status, location=None, response_digest="0" * 64, journal_rows=rows,
                              idempotency_key=key, repeat_of=repeat_of)
        self.operations.append(operation)
        return operation

    def count(self) -> int:
        return duplicate_effects(self.operations, self.journal, EFFECT_TABLES)


def test_one_effect_is_no_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1")
    assert evidence.count() == 0


def test_a_same_key_repeat_is_no_duplicate() -> None:
    evidence = Evidence()
    first = evidence.op("action-1")
    evidence.op("action-1", inserts=(), repeat_of=first.seq)
    assert evidence.count() == 0


def test_the_same_request_under_a_new_key_that_commits_is_a_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1")
    evidence.op("action-1.retry")
    assert evidence.count() == 1


def test_a_request_repeated_three_times_under_new_keys_counts_two() -> None:
    evidence = Evidence()
    for key in ("action-1", "action-2", "action-3"):
        evidence.op(key)
    assert evidence.count() == 2


def test_same_key_repeats_between_new_key_repeats_are_not_counted() -> None:
    evidence = Evidence()
    first = evidence.op("action-1")
    evidence.op("action-1", inserts=(), repeat_of=first.seq)
    evidence.op("action-2")
    evidence.op("action-2", inserts=(), repeat_of=3)
    assert evidence.count() == 1


@pytest.mark.parametrize("difference", [{"body": "credit_amount=2.00"}, {"path": "/helpdesk/orders/O-1041/credits"},
                                        {"method": "PUT"}, {"query": "x=1"}], ids=str)
def test_two_different_requests_are_no_duplicate(difference: dict[str, str]) -> None:
    evidence = Evidence()
    evidence.op("action-1")
    evidence.op("action-2", **difference)  # type: ignore[arg-type]
    assert evidence.count() == 0


def test_the_same_request_without_a_key_after_a_keyed_commit_is_a_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1")
    evidence.op(None)
    assert evidence.count() == 1


def test_a_repeat_with_another_content_type_is_still_a_duplicate() -> None:
    """The duplicate's identity is method, path, query and body (long-running.md; metrics.py: method, path, body)."""
    evidence = Evidence()
    evidence.op("action-1")
    evidence.operations.append(evidence.op("action-2").model_copy(update={"content_type": FORM + "; charset=utf-8"}))
    del evidence.operations[-2]
    assert evidence.count() == 1


def test_a_repeat_that_inserts_only_into_a_non_effect_table_is_no_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1", inserts=("refund", "follow_up"))
    evidence.op("action-2", inserts=("follow_up",))
    assert evidence.count() == 0


def test_a_repeat_that_only_updates_an_effect_table_is_no_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1")
    evidence.op("action-2", inserts=(), updates=("refund", "order"))
    assert evidence.count() == 0


def test_a_duplicate_counts_each_effect_row_it_inserted_and_no_other_row() -> None:
    evidence = Evidence()
    evidence.op("action-1", inserts=("refund", "notification", "follow_up"), updates=("order",))
    evidence.op("action-2", inserts=("refund", "notification", "follow_up"), updates=("order",))
    assert evidence.count() == 2


def test_a_repeat_of_an_attempt_that_committed_nothing_is_no_duplicate() -> None:
    evidence = Evidence()
    evidence.op("action-1", inserts=(), status=422)
    evidence.op("action-2")
    assert evidence.count() == 0


def test_the_first_commit_after_failed_attempts_is_the_original() -> None:
    evidence = Evidence()
    evidence.op("action-1", inserts=(), status=500)
    evidence.op("action-2")
    evidence.op("action-3", inserts=(), status=500)
    evidence.op("action-4")
    assert evidence.count() == 1


def test_gets_are_never_duplicates() -> None:
    evidence = Evidence()
    for key in ("action-1", "action-2", "action-3"):
        evidence.op(key, method="GET", body="", inserts=())
    assert evidence.count() == 0


@given(st.permutations(range(5)))
def test_the_count_does_not_depend_on_the_order_the_lists_are_given_in(order: list[int]) -> None:
    evidence = Evidence()
    for key in ("action-1", "action-2"):
        evidence.op(key)
    evidence.op("action-3", body="credit_amount=2.00")
    evidence.op("action-4", body="credit_amount=2.00", inserts=("follow_up",))
    evidence.op("action-5", inserts=("notification",))
    operations = [evidence.operations[i] for i in order]
    journal = list(reversed(evidence.journal)) if order[0] % 2 else evidence.journal
    assert duplicate_effects(operations, journal, EFFECT_TABLES) == 2


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans()), max_size=12))
def test_the_count_is_commits_beyond_the_first_of_each_request(requests: list[tuple[str, bool, bool]]) -> None:
    """Model: each request (body) first committing is the original; every later commit of it under another key is one
    duplicate per effect row; a same-key repeat (answered from the log) and an attempt committing nothing add none."""
    evidence = Evidence()
    committed: dict[str, int] = {}
    expected = 0
    for number, (body, commits, same_key) in enumerate(requests, start=1):
        if same_key and body in committed:
            original = evidence.operations[committed[body] - 1]
            evidence.op(original.idempotency_key, body=body, inserts=(), repeat_of=original.seq)
        elif commits:
            operation = evidence.op(f"action-{number}", body=body)
            if body in committed:
                expected += 1
            else:
                committed[body] = operation.seq
        else:
            evidence.op(f"action-{number}", body=body, inserts=(), status=422)
    assert evidence.count() == expected


# --------------------------------------------------------------------------------------------------------------------
# 5. Compaction judgement
# --------------------------------------------------------------------------------------------------------------------


def judge(text: str) -> tuple[bool, bool, bool, bool, list[str]]:
    lg = ledgers()
    return kept(text, lg.constraints, lg.approvals, lg.completed_effects, lg.unfinished_work)


def full_summary() -> str:
    return summary("ledgers/1", ledgers(), transcript())


def _lines() -> list[tuple[int, str]]:
    """(ledger index: 0 constraints, 1 approvals, 2 effects, 3 work; the line) of every entry."""
    lg = ledgers()
    parts = [Ledgers(constraints=lg.constraints), Ledgers(constraints=Constraints(), approvals=lg.approvals),
             Ledgers(constraints=Constraints(), completed_effects=lg.completed_effects),
             Ledgers(constraints=Constraints(), unfinished_work=lg.unfinished_work)]
    return [(index, line) for index, part in enumerate(parts) for line in ledger_lines(part)]


def test_the_ledger_lines_are_the_union_of_each_ledgers_lines() -> None:
    assert sorted(line for _, line in _lines()) == sorted(ledger_lines(ledgers()))
    assert len(ledger_lines(ledgers())) == len(grants()) + len(approvals()) + len(effects()) + len(work())


def test_a_ledgers_1_summary_keeps_everything() -> None:
    assert judge(full_summary()) == (True, True, True, True, [])


def test_the_summary_with_extra_unrelated_lines_and_shuffled_keeps_everything() -> None:
    lines = full_summary().splitlines()
    random.Random(7).shuffle(lines)
    text = "\n".join(["Earlier: the agent opened the orders page.", *lines, "Note: EUR 12.00 was mentioned."])
    assert judge(text) == (True, True, True, True, [])


def expected_flags(ledger: int) -> tuple[bool, bool, bool, bool]:
    flags = [True, True, True, True]
    flags[ledger] = False
    return flags[0], flags[1], flags[2], flags[3]


def _replace_line(text: str, line: str, new: str | None) -> str:
    lines = text.splitlines()
    assert line in lines
    if new is None:
        return "\n".join(other for other in lines if other != line)
    return "\n".join(new if other == line else other for other in lines)


@pytest.mark.parametrize("index", range(8))
def test_dropping_any_single_line_is_caught_for_its_ledger(index: int) -> None:
    ledger, line = _lines()[index]
    result = judge(_replace_line(full_summary(), line, None))
    assert result[:4] == expected_flags(ledger) and result[4], result


def _mutations(line: str) -> dict[str, str]:
    """Near-duplicates of a line: the fact changed, the rest of the wording kept."""
    out: dict[str, str] = {}
    for old, new in [("49.90", "49.91"), ("49.90", "149.90"), ("12.50", "12.05"), ("EUR", "USD"), ("USD", "EUR"),
                     ("RA-12", "RA-13"), ("RA-15", "RA-1"), ("approved", "used"), ("used", "approved"),
                     ("FU-1", "FU-11"), ("FU-2", "FU-21"), ("action-4", "action-40"), ("action-6", "action-6.retry"),
                     ("open", "done"), ("2026-03-10", "2026-03-11"), ("1042", "1043")]:
        if old in line:
            out[f"{old}->{new}"] = line.replace(old, new, 1)
    out["suffixed"] = line + "0"
    out["prefixed"] = "X" + line
    out["currency dropped"] = line.replace(" EUR", "").replace(" USD", "").replace("EUR ", "").replace("USD ", "")
    return {name: text for name, text in out.items() if text != line}


MUTATED = [(ledger, line, name, new) for ledger, line in _lines() for name, new in _mutations(line).items()]


@pytest.mark.parametrize(("ledger", "line", "name", "new"), MUTATED,
                         ids=[f"{m[0]}:{m[2]}:{m[1][:24]}" for m in MUTATED])
def test_a_changed_fact_in_any_line_is_caught_for_its_ledger(ledger: int, line: str, name: str, new: str) -> None:
    result = judge(_replace_line(full_summary(), line, new))
    assert result[:4] == expected_flags(ledger) and result[4], (name, new, result)


def test_a_summary_with_crlf_line_endings_keeps_everything() -> None:
    assert judge(full_summary().replace("\n", "\r\n")) == (True, True, True, True, [])


def test_a_line_kept_only_inside_another_line_is_not_kept() -> None:
    """'Its line is in the summary': a ledger line run together with another is no longer a line of the summary."""
    ledger, line = _lines()[2]
    text = _replace_line(full_summary(), line, None)
    text += f"\nEarlier the agent read: {line} (twice)"
    assert judge(text)[:4] == expected_flags(ledger)


@pytest.mark.parametrize("policy", ["ledgers/1:drop-currency", "ledgers/1:changed-amount"])
def test_the_seed_mutant_policies_lose_what_they_change(policy: str) -> None:
    result = judge(summary(policy, ledgers(), transcript()))  # type: ignore[arg-type]
    assert result[1] is False and result[4]
    if policy == "ledgers/1:drop-currency":
        assert result[0] is False  # the grant's limit is money too


def test_an_empty_summary_keeps_only_empty_ledgers() -> None:
    assert kept("", Constraints(), [], [], []) == (True, True, True, True, [])
    assert judge("")[:4] == (False, False, False, False)
