"""Command-line options more than one command takes, defined once: how a run's episodes are carried out (`run`,
`experiment run`, `experiment noise-floor`), and the port a server command listens on (`serve`, `server`,
`mock-llm`)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated

import typer

from computerops.core.vocabulary import ExecutorKind

if TYPE_CHECKING:
    from computerops.core.execution import ExecutorChoice

ExecutorOption = Annotated[ExecutorKind, typer.Option(
    help="local: episodes run in this process over one browser; ray: on Ray actors, each with its own browser and "
         "sites server (pip install -e '.\\[ray]'). The evidence is the same.")]
RayAddressOption = Annotated[str | None, typer.Option(
    help="With --executor ray: the Ray cluster to join (e.g. HOST:6379); without it a local Ray instance starts "
         "in-process.")]
WorkersOption = Annotated[int | None, typer.Option(
    min=1, help="With --executor ray: Ray actors, one episode in flight each (default: one per CPU of the cluster, "
                "at most one per planned episode).")]


def executor_choice(executor: ExecutorKind, ray_address: str | None, workers: int | None) -> ExecutorChoice:
    """The options as the service takes them (checked there: `ExecutorChoice.problem`)."""
    from computerops.core.execution import ExecutorChoice  # pydantic: not imported for `--help`
    return ExecutorChoice(executor=executor, ray_address=ray_address, workers=workers)


PortOption = Annotated[int, typer.Option(min=1, max=65535, help="TCP port to listen on (1-65535).")]


def unlistenable(host: str, port: int) -> str | None:
    """Why a server cannot listen on host:port (in use, not this machine's address, not allowed), in one line; None
    when it can (the address is let go again at once: a server started right after takes it)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        return f"--host {host}: not an address of this machine ({exc})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None
