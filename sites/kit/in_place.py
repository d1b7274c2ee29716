"""Sync work of a request on the event loop's own thread, for an app that serves one request at a time (replay).

FastAPI runs a sync handler, and each sync dependency, through `anyio.to_thread.run_sync`: a worker thread's hop
per call, several per request, so that a served loop answers other requests meanwhile. Replay sends one request
at a time and nothing else waits on its loop, so each hop only adds time, and on a loaded machine a wait to be
scheduled. `anyio.to_thread.run_sync` is wrapped once per process (`allow_in_place`); the wrapper calls the
function in place only inside `sync_in_place()`, which the operation log of an app built with
`create_app(database_in_thread=False)` enters for each request (a context variable: every other task, a served
app's included, still hops).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar, TypeVarTuple, Unpack

import anyio.to_thread
from anyio import CapacityLimiter

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")
_IN_PLACE: ContextVar[bool] = ContextVar("computerops_in_place", default=False)
_THREADED = anyio.to_thread.run_sync


async def _run_sync(func: Callable[[Unpack[_Args]], _T], *args: *_Args, abandon_on_cancel: bool = False,
                    cancellable: bool | None = None, limiter: CapacityLimiter | None = None) -> _T:
    """`anyio.to_thread.run_sync`, or the call itself inside `sync_in_place()`."""
    if _IN_PLACE.get():
        return func(*args)
    return await _THREADED(func, *args, abandon_on_cancel=abandon_on_cancel, cancellable=cancellable,
                           limiter=limiter)


def allow_in_place() -> None:
    """Wraps `anyio.to_thread.run_sync` so that `sync_in_place()` takes effect (idempotent; outside it the wrapper
    hops as before)."""
    anyio.to_thread.run_sync = _run_sync


@contextmanager
def sync_in_place() -> Iterator[None]:
    """Within it, this task's (and its child tasks') sync calls through anyio's worker threads run in place."""
    token = _IN_PLACE.set(True)
    try:
        yield
    finally:
        _IN_PLACE.reset(token)
