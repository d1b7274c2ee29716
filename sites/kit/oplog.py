"""The operation log: middleware that serialises, numbers and records every request of a tenant.

It is a pure ASGI middleware so that it sees the exact request and response bytes. For a path
under a site's mount point it resolves the tenant (401 without a token, 403 for an unknown one),
allocates the next sequence number under the tenant's lock, runs the app with the operation
context in `scope["state"]`, and logs the operation before forwarding the unchanged response. A repeat of a
committed request under the same idempotency key is answered from the log instead (sites/kit/idempotency.py).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio.to_thread
from sqlalchemy import Engine
from sqlmodel import Session, select
from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from computerops.core.binding import TENANT_COOKIE, TENANT_HEADER, tenant_bindings
from computerops.core.vocabulary import (
    ACTION_HEADER,
    DISPLAYED_DESTINATIONS,
    FETCH_DESTINATION_HEADER,
    IDEMPOTENCY_HEADER,
)
from sites.kit.broker import (
    CORRECTIONS,
    NOTHING_GRANTED,
    BrokerDecision,
    BrokerRequest,
    RequestSeen,
    RowKey,
    decide,
    granted,
    inserted_rows,
    tallied,
    withdrawn,
)
from sites.kit.faults import FaultDecision
from sites.kit.governed import Row, blocked_page, form_fields, governing
from sites.kit.idempotency import MAX_KEY_CHARS, SAFE_METHODS, KeyedRequest, StoredResponse, earlier_commit, key_of
from sites.kit.in_place import allow_in_place, sync_in_place
from sites.kit.injection import SITE_COOPERATIVE, FaultSession, Served, after_commit, refusal, refusal_of_drift
from sites.kit.journal import journal_rows_of
from sites.kit.operation import STATE_OPERATION, STATE_TENANT, OperationContext
from sites.kit.pages import message_page
from sites.kit.records import Operation, Shown
from sites.kit.site import SiteDefinition
from sites.kit.tenancy import Tenant, TenantRegistry

logger = logging.getLogger(__name__)


def _missing_tenant(site: SiteDefinition) -> HTMLResponse:
    return message_page(
        status=401,
        title="Tenant required",
        message=(
            f"The {site.title} site belongs to a tenant, and this request carried no tenant token. "
            f"Open the /_enter/<code> address you were given, or send the {TENANT_COOKIE} "
            f"cookie or the {TENANT_HEADER} header."
        ),
    )


def _unknown_tenant() -> HTMLResponse:
    return message_page(
        status=403,
        title="Unknown tenant",
        message="The tenant token sent with this request is not known to this server.",
    )


def _wrong_site(site: SiteDefinition) -> HTMLResponse:
    return message_page(
        status=403,
        title="Wrong site for this tenant",
        message=f"The tenant token sent with this request does not belong to the {site.title} site.",
    )


def _two_bindings() -> HTMLResponse:
    return message_page(
        status=400,
        title="Two tenant bindings",
        message=(f"This request carried more than one tenant binding (the {TENANT_HEADER} header and the "
                 f"{TENANT_COOKIE} cookie together, or one of them twice), so which tenant it is for is not clear; "
                 "nothing was done. Page script may have set one of them."),
    )


def _server_error(seq: int) -> HTMLResponse:
    return message_page(status=500, title="Server error", message=f"Operation {seq} failed; no change was saved.")


MAX_ACTION_NUMBER = 10**9
"""Largest action number a request may carry (far above any episode's budget, far below SQLite's integer limit)."""
_ACTION_NUMBER = re.compile(r"[0-9]{1,10}")


def action_number(raw: str | None) -> int | Literal["invalid"] | None:
    """The action number an `X-ComputerOps-Action` header carries: None without one, "invalid" for a value that is
    not 0 to MAX_ACTION_NUMBER in ASCII digits (refused before any work, so nothing is done and nothing logged)."""
    if raw is None:
        return None
    if not _ACTION_NUMBER.fullmatch(raw) or int(raw) > MAX_ACTION_NUMBER:
        return "invalid"
    return int(raw)


def _bad_action_header() -> HTMLResponse:
    return message_page(status=400, title="Bad action header",
                        message=f"The {ACTION_HEADER} header must be a whole number from 0 to {MAX_ACTION_NUMBER}.")


def _bad_idempotency_key() -> HTMLResponse:
    return message_page(status=400, title="Bad idempotency key",
                        message=f"The {IDEMPOTENCY_HEADER} header must be 1 to {MAX_KEY_CHARS} visible ASCII "
                                "characters, with no spaces; nothing was done.")


def raw_path_of(scope: Scope) -> str | None:
    """The request path exactly as sent (percent-escapes kept) when it differs from the decoded `path`: replay must
    send `/a%3Fb` as such, not re-parse the decoded `/a?b`. None when the two are the same text."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes | bytearray):
        return None
    text = bytes(raw).decode("latin-1").split("?", 1)[0]  # some servers leave the query on it
    return None if text == scope["path"] else text


MAX_REQUEST_BYTES = 1_000_000
"""Largest request body the operation log reads and keeps; a longer one is refused with 413 before any handler runs
(no form of the sites is that long: a page's script could otherwise have megabytes stored in the evidence)."""
_DESTINATION = re.compile(r"[a-z-]{1,32}")


async def _read_body(receive: Receive) -> bytes | None:
    """The request body; None when it is over MAX_REQUEST_BYTES (reading stops there: the rest is never held)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def own_location(location: str | None, scope: Scope, headers: Headers) -> str | None:
    """A redirect's target as recorded: a URL of the request's own origin (as a framework's redirect to the path
    without its trailing slash writes it: `http://127.0.0.1:41234/helpdesk/tickets`) by its path and query, so that
    the record does not depend on the address the server was reached at (replay reaches it at another); any other
    target as it is."""
    if location is None:
        return None
    parts = urlsplit(location)
    own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
    if parts.scheme and parts.netloc and f"{parts.scheme}://{parts.netloc}".lower() == own:
        return urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))
    return location


def destination_of(headers: Headers) -> str | None:
    """How the browser will use the response when not as a document (its `Sec-Fetch-Dest`; "other" for a value no
    browser sends); None for a document or frame, and for a request that does not say."""
    value = headers.get(FETCH_DESTINATION_HEADER)
    if value is None or value in DISPLAYED_DESTINATIONS:
        return None
    return value if _DESTINATION.fullmatch(value) else "other"


def _request_fields(operation: OperationContext, headers: Headers, scope: Scope) -> dict[str, Any]:
    """What an operation records of the request itself (its seq and action, method, path, query, content type,
    idempotency key)."""
    key = key_of(headers.get(IDEMPOTENCY_HEADER))
    return {"seq": operation.seq, "action": operation.action, "method": scope["method"], "path": scope["path"],
            "raw_path": raw_path_of(scope), "query": scope.get("query_string", b"").decode("latin-1"),
            "content_type": headers.get("content-type"), "idempotency_key": None if key == "invalid" else key}


def _keyed_request(fields: Mapping[str, Any], body: str) -> KeyedRequest | None:
    """An effectful request under a key, as `idempotency.earlier_commit` compares it; None for any other."""
    if fields["idempotency_key"] is None or fields["method"] in SAFE_METHODS:
        return None
    return KeyedRequest(key=fields["idempotency_key"], method=fields["method"], path=fields["path"],
                        raw_path=fields["raw_path"], query=fields["query"], content_type=fields["content_type"],
                        body=body)


def _too_large() -> HTMLResponse:
    return message_page(status=413, title="Request too large",
                        message=f"The request body was over {MAX_REQUEST_BYTES} bytes; nothing was done.")


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the buffered body over once, then defers to the real one."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class _BufferedResponse:
    """Collects what the app sends, so it can be digested and logged before it is forwarded."""

    def __init__(self) -> None:
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)

    @property
    def status(self) -> int:
        assert self.start is not None
        return int(self.start["status"])

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def header(self, name: str) -> str | None:
        assert self.start is not None
        return Headers(raw=self.start.get("headers", [])).get(name)

    def stored(self) -> StoredResponse:
        """The response as a repeat of its request would get it back (sites/kit/idempotency.py)."""
        return StoredResponse(status=self.status, location=self.header("location"),
                              content_type=self.header("content-type"), body=self.body)

    async def forward(self, send: Send) -> None:
        assert self.start is not None
        await send(self.start)
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


async def _buffer(response: Response, scope: Scope, receive: Receive) -> _BufferedResponse:
    buffered = _BufferedResponse()
    await response(scope, receive, buffered.send)
    return buffered


_T = TypeVar("_T")
Database = Callable[..., Awaitable[Any]]
"""How the operation log runs its own database calls: `in_worker_thread` or `in_place`."""


async def in_worker_thread(call: Callable[..., _T], *args: Any) -> _T:
    """The call in anyio's worker threads: the event loop serves other requests meanwhile."""
    return await anyio.to_thread.run_sync(call, *args)


async def in_place(call: Callable[..., _T], *args: Any) -> _T:
    """The call on the event loop's own thread (replay: one request at a time, nothing else waits)."""
    return call(*args)


class OperationLogMiddleware:
    """Numbers, serialises and logs every request under a mounted site's prefix."""

    def __init__(self, app: ASGIApp, registry: TenantRegistry, *, database_in_thread: bool = True) -> None:
        """`database_in_thread`: the log's own database calls, and the site's sync handlers and dependencies, run in
        worker threads, so a served request never blocks the event loop; replay, one request at a time in its own
        process, runs them all in place (a thread hop costs more than most calls: sites/kit/in_place.py)."""
        self.app = app
        self.registry = registry
        self.database: Database = in_worker_thread if database_in_thread else in_place
        self.sync: Callable[[], AbstractContextManager[None]] = nullcontext if database_in_thread else sync_in_place
        if not database_in_thread:
            allow_in_place()

    def _site_of(self, path: str, sites: Mapping[str, SiteDefinition]) -> SiteDefinition | None:
        return next((site for site in sites.values() if site.owns_path(path)), None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        site = self._site_of(scope["path"], self.registry.sites) if scope["type"] == "http" else None
        if site is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        bindings = tenant_bindings((name.decode("latin-1"), value.decode("latin-1"))
                                   for name, value in scope["headers"])
        if len(bindings) > 1:  # page script set a binding of its own beside the real one: refused before any work
            logger.warning("refused %s %s: it carried %d tenant bindings", scope["method"], scope["path"][:200],
                           len(bindings))
            await _two_bindings()(scope, receive, send)
            return
        token = bindings[0] if bindings else None
        tenant = self.registry.resolve(token)
        if tenant is None:
            refusal = _missing_tenant(site) if not token else _unknown_tenant()
            await refusal(scope, receive, send)
            return
        if tenant.site != site.name:
            await _wrong_site(site)(scope, receive, send)
            return
        if action_number(headers.get(ACTION_HEADER)) == "invalid":
            await _bad_action_header()(scope, receive, send)
            return
        if key_of(headers.get(IDEMPOTENCY_HEADER)) == "invalid" or len(headers.getlist(IDEMPOTENCY_HEADER)) > 1:
            await _bad_idempotency_key()(scope, receive, send)
            return
        async with tenant.lock:
            with self.sync():
                await self._run_operation(tenant, headers, scope, receive, send)

    async def _run_operation(
        self, tenant: Tenant, headers: Headers, scope: Scope, receive: Receive, send: Send
    ) -> None:
        seq = await self.database(tenant.last_operation_seq) + 1
        number = action_number(headers.get(ACTION_HEADER))
        operation = OperationContext(site=tenant.site, seed=tenant.seed, seq=seq,
                                     action=None if number == "invalid" else number)
        read = await _read_body(receive)
        method, path = scope["method"], scope["path"]
        destination = destination_of(headers)
        if read is None:
            await self._refuse_oversized(tenant, operation, headers, destination, scope, receive, send)
            return
        body = read
        keyed = _keyed_request(_request_fields(operation, headers, scope), body.decode("utf-8", errors="replace"))
        if keyed is not None and (earlier := await self.database(_earlier_commit, tenant, keyed)):
            await self._repeat(tenant, operation, headers, destination, keyed.body, earlier, scope, receive, send)
            return
        faults = tenant.faults
        decision = None if faults is None else faults.injector.decide(seq, method, path)
        fired = decision
        unsupported = decision is not None and decision.fault not in tenant.definition.fault_support
        if decision is not None and decision.fault in SITE_COOPERATIVE and unsupported:
            decision, fired = decision.model_copy(update={"applied": False}), None  # the site cannot carry it out
        response = _BufferedResponse()
        handled: StoredResponse | None = None  # the handler's own response, as a repeat would get it
        failure: Exception | None = None
        shown = Shown()  # a page the handler never rendered shows nothing of the tenant's data
        app_body = body if faults is None else faults.drift.translate(body)  # the fields as the handler reads them
        broker = await self._broker_decision(tenant, seq, method, path, app_body, headers)
        if broker is not None and broker.blocked and decision is not None:
            decision, fired = decision.model_copy(update={"applied": False}), None  # the broker answered first
        replaced = (blocked_page(broker) if broker is not None and broker.blocked
                    else self._fault_response(faults, fired, tenant, method, path, body))
        if replaced is not None:
            response = await _buffer(replaced, scope, receive)
        else:
            if fired is not None:
                operation.fault = fired
                operation.discard = fired.fault == "false_success"
            state: dict[str, Any] = {**scope.get("state", {}), STATE_TENANT: tenant, STATE_OPERATION: operation}
            try:
                await self.app({**scope, "state": state}, _replaying(app_body, receive), response.send)
            except Exception as error:  # logged as a 500 operation, then re-raised for the server log
                failure = error
            if failure is not None or response.start is None or not response.complete:
                response = await _buffer(_server_error(seq), scope, receive)
            else:
                shown = operation.shown.shown()
                handled = response.stored()
        journal_rows = await self.database(_count_journal_rows, tenant, seq)
        # kept for a repeat under the key before an after-commit fault replaces what goes out
        committed = handled if keyed is not None and journal_rows else None
        if faults is not None:
            response, fired, shown = await self._after(faults, fired, response, shown, seq, method, scope,
                                                       journal_rows, receive)
            if decision is not None and fired is None:
                decision = decision.model_copy(update={"applied": False})
        record = Operation(
            **_request_fields(operation, headers, scope),
            body=body.decode("utf-8", errors="replace"),
            status=response.status,
            location=own_location(response.header("location"), scope, headers),
            response_digest=hashlib.sha256(response.body).hexdigest(),
            journal_rows=journal_rows,
            fault=decision,
            app=tenant.definition.app_of(method, path),
            shown=shown if destination is None else Shown(),
            destination=destination,
            broker=broker,
        )
        await self.database(tenant.record_operation, record, committed)
        if record.journal_rows and tenant.on_commit is not None:
            tenant.on_commit(record)  # committed and logged; the response has not gone out yet
        await response.forward(send)
        if failure is not None:
            raise failure

    async def _repeat(self, tenant: Tenant, operation: OperationContext, headers: Headers, destination: str | None,
                      body: str, earlier: tuple[int, StoredResponse], scope: Scope, receive: Receive,
                      send: Send) -> None:
        """A repeat of a committed keyed request: answered with the committed operation's stored response, byte for
        byte, without its handler, the broker or a fault; logged with `repeat_of`, committing nothing."""
        seq, stored = earlier
        response = await _buffer(stored.response(), scope, receive)
        record = Operation(
            **_request_fields(operation, headers, scope), body=body, status=response.status,
            location=own_location(response.header("location"), scope, headers),
            response_digest=hashlib.sha256(response.body).hexdigest(), journal_rows=0,
            app=tenant.definition.app_of(scope["method"], scope["path"]), shown=Shown(), destination=destination,
            repeat_of=seq)
        await self.database(tenant.record_operation, record)
        await response.forward(send)

    async def _broker_decision(self, tenant: Tenant, seq: int, method: str, path: str, body: bytes,
                               headers: Headers) -> BrokerDecision | None:
        """The broker's decision on a request to a route a grant governs, in an episode with grants; else None."""
        session, routes = tenant.broker, tenant.definition.governed
        if session is None or not routes:
            return None
        found = governing(routes, method, path)
        if found is None:
            return None
        route, match = found
        form = form_fields(body, headers.get("content-type"))
        request = await self.database(route.extract, match, form, _StateLookup(tenant.engine))
        if request is None:
            return None
        revoked: frozenset[str] = frozenset()
        already = NOTHING_GRANTED
        revocable = any(grant.revoked_by is not None for grant in session.grants)
        if revocable or tallied(session.grants, request):  # only then the earlier requests matter
            earlier = await self.database(tenant.operations)
            revoked = withdrawn(session.grants, (RequestSeen(o.method, o.path, o.status) for o in earlier))
            # the running totals: the tenant's own log, so a fresh tenant (and replay's) starts at zero
            already = granted(session.grants, ((o.broker, o.journal_rows > 0) for o in earlier))
        inserted = await _corrigible(tenant, request, self.database) if session.own_corrections else None
        return decide(session.grants, request, seq=seq, revoked=revoked, mode=session.mode, inserted=inserted,
                      already=already)

    async def _refuse_oversized(self, tenant: Tenant, operation: OperationContext, headers: Headers,
                                destination: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        """A request whose body is over the bound: logged (without its body) as refused, and answered 413."""
        response = await _buffer(_too_large(), scope, receive)
        record = Operation(
            **_request_fields(operation, headers, scope), body="", status=response.status, location=None,
            response_digest=hashlib.sha256(response.body).hexdigest(), journal_rows=0, app=None, shown=Shown(),
            destination=destination, oversized=True)
        await self.database(tenant.record_operation, record)
        await response.forward(send)


    def _fault_response(
        self, faults: FaultSession | None, fired: FaultDecision | None, tenant: Tenant, method: str, path: str,
        body: bytes,
    ) -> HTMLResponse | None:
        """The response that replaces the handler: a fault that never reaches it, or a drifted field."""
        if faults is None:
            return None
        if fired is not None and fired.fault == "schema_drift":
            faults.drift.activate(fired)
            return faults.drift.refusal(body) or refusal_of_drift(fired)
        if fired is not None and (replaced := refusal(fired, tenant.definition, method, path)) is not None:
            return replaced
        return faults.drift.refusal(body) if method != "GET" else None

    async def _after(
        self, faults: FaultSession, fired: FaultDecision | None, response: _BufferedResponse, shown: Shown, seq: int,
        method: str, scope: Scope, journal_rows: int, receive: Receive,
    ) -> tuple[_BufferedResponse, FaultDecision | None, Shown]:
        """Faults that act on the handler's answer (ambiguous after commit, stale read) and the renaming of
        drifted fields on every HTML page the handler answers, whatever its status; with what the response that
        goes out shows (an older page's data, for a stale read; nothing, for a timeout page)."""
        key = scope["path"] + "?" + scope.get("query_string", b"").decode("latin-1")
        if journal_rows:
            faults.stale.changed()
        if fired is not None and (replaced := after_commit(fired)) is not None:
            return await _buffer(replaced, scope, receive), fired, Shown()
        fresh_page = method == "GET" and response.status == 200
        body: bytes | None = None
        if fired is not None and fired.fault == "stale_read":
            served = faults.stale.stale(key) if fresh_page else None
            if served is None:
                fired = None  # nothing older to serve: the read is fresh, and no fault fired
            else:
                body, shown = served.body, served.shown
        elif fresh_page:
            faults.stale.remember(key, Served(response.body, shown.model_copy(update={"as_of": shown.as_of or seq})))
        html = (response.header("content-type") or "").startswith("text/html")
        if faults.drift.active and html:
            body = faults.drift.rewrite(response.body if body is None else body)
        if body is None:
            return response, fired, shown
        return await _buffer(HTMLResponse(body, status_code=response.status), scope, receive), fired, shown


class _StateLookup:
    """The broker's look-up into a tenant's state (sites/kit/broker.py `Lookup`): one select in a session of its
    own that never flushes or commits. Called from the extract's worker thread while the middleware holds the
    tenant's lock, so it sees the state the handler would start from, and takes no lock itself."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __call__(self, model: type[Row], /, **where: object) -> Row | None:
        with Session(self.engine, autoflush=False) as session:
            return session.exec(select(model).filter_by(**where)).first()


def _earlier_commit(tenant: Tenant, request: KeyedRequest) -> tuple[int, StoredResponse] | None:
    with tenant.engine.connect() as connection:
        return earlier_commit(connection, request)


def _count_journal_rows(tenant: Tenant, seq: int) -> int:
    with tenant.engine.connect() as connection:
        return journal_rows_of(connection, seq)


async def _corrigible(tenant: Tenant, request: BrokerRequest, database: Database) -> frozenset[RowKey]:
    """The rows the episode has inserted before `request` (its committed journal) through a route no grant governs,
    which an own correction may change or delete; read only for a request that could be one. A row a governed
    request inserted (a payment within a grant's limit) is never corrigible past its grant: changing it is a request
    a grant must allow like any other."""
    if request.capability not in CORRECTIONS or request.object is None:
        return frozenset()
    journal = await database(tenant.journal)
    governed = {o.seq for o in await database(tenant.operations) if o.broker is not None}
    return inserted_rows(entry for entry in journal if entry.operation not in governed)
