"""How a request is bound to a tenant, read once for the sites' operation log and the harness's egress proxy.

A request reaches a tenant through exactly one binding: the `X-ComputerOps-Tenant` header (the harness's proxy
sets it on every request of an episode, and in-process clients and replay send it) or the `computerops_tenant`
cookie (what `/_enter/<code>` gives a person's browser). Page script can set cookies and fetch() headers of its own,
so a request that carries more than one binding is refused by the server, and in an episode the proxy removes any
binding the page itself sent (and records the attempt) before it adds the episode's own (adapter/egress.py): page
content can neither set nor shadow the episode's tenant, nor lock the agent out of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import cookie_parser

TENANT_COOKIE = "computerops_tenant"
"""Cookie that binds a person's browser to a tenant (set by `/_enter/<code>`)."""
TENANT_HEADER = "X-ComputerOps-Tenant"
"""Header that binds a request to a tenant: set by the harness's egress proxy, in-process clients and replay."""


def tenant_bindings(headers: Iterable[tuple[str, str]]) -> list[str]:
    """Every tenant token the request's header lines (name, value) carry, in order: each tenant header, and each
    tenant cookie of each Cookie header, read as the server reads cookies (starlette's parser, chunk by chunk, so a
    cookie that appears twice counts twice)."""
    tokens: list[str] = []
    for name, value in headers:
        key = name.strip().lower()
        if key == TENANT_HEADER.lower():
            tokens.append(value.strip())
        elif key == "cookie":
            tokens.extend(token for chunk in value.split(";")
                          for cookie, token in cookie_parser(chunk).items() if cookie == TENANT_COOKIE)
    return tokens


def _binds(name: str, value: str) -> bool:
    return bool(tenant_bindings([(name, value)]))


def without_bindings(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The header lines (name, value) with every tenant binding taken out: tenant headers dropped, tenant cookies
    cut from each Cookie header (the header dropped when nothing else is left in it)."""
    kept: list[tuple[str, str]] = []
    for name, value in headers:
        if not _binds(name, value):
            kept.append((name, value))
        elif name.strip().lower() == "cookie":
            rest = [chunk for chunk in value.split(";") if not _binds(name, chunk)]
            if any(chunk.strip() for chunk in rest):
                kept.append((name, ";".join(rest)))
    return kept
