"""In-process clients for the synthetic sites, shared by the site tests (tests/test_sites_*.py).

A site test module declares its fixtures in one line, unpacking them into module attributes of the
same names, where pytest finds them:

    registry, app_client, tenant, browser = site_fixtures(INVENTORY)
    seeded, reader = seeded_fixture(INVENTORY, (1, 2, 3)), reader_fixture(INVENTORY)

`registry` (module scope) is a TenantRegistry over that one site, `app_client` (module scope) a
TestClient over it that does not follow redirects, `tenant` a fresh tenant of seed 1 for each test,
dropped after it, and `browser` a Browser for that tenant. Each call makes new fixtures, so modules
never share a registry or a client. The fixtures are typed `object`: only pytest uses them.
A volume test adds `seeded` (the seeded state of a fresh tenant of each of its seeds) and `reader` (one tenant of
seed 1 shared by the module's tests that only read pages, since page loads change nothing).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pytest
from fastapi.testclient import TestClient

from sites.kit import TENANT_HEADER, SiteDefinition, StateSnapshot, Tenant, TenantRegistry, create_app

ERROR = re.compile(r'<p class="error" role="alert">(.*?)</p>')


class Browser:
    """One tenant's requests, with the token header every request needs."""

    def __init__(self, client: TestClient, tenant: Tenant) -> None:
        self.client, self.tenant = client, tenant

    def get(self, path: str, status: int = 200) -> str:
        """The page at `path`; fails the test unless it answers `status`."""
        response = self.client.get(path, headers={TENANT_HEADER: self.tenant.token})
        assert response.status_code == status, response.text
        return response.text

    def post(self, path: str, data: Mapping[str, str | list[str]] | None = None, status: int = 303) -> str:
        """Post a form to `path`: the redirect's location, else the page; fails the test unless it answers `status`."""
        response = self.client.post(path, data=data or {}, headers={TENANT_HEADER: self.tenant.token})
        assert response.status_code == status, response.text
        return response.headers.get("location") or response.text


def error_of(page: str) -> str:
    """The text of the page's error alert; fails the test when the page shows none."""
    found = ERROR.search(page)
    assert found, "the page shows no error"
    return html.unescape(found.group(1))


def registry_fixture(site: SiteDefinition) -> object:
    """A module-scoped `registry` fixture: a TenantRegistry over `site` alone, in a fresh folder."""

    def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
        registry = TenantRegistry(Path(tmp_path_factory.mktemp(site.name)), sites={site.name: site})
        yield registry
        registry.close()

    return pytest.fixture(scope="module", name="registry")(registry)


def app_client_fixture() -> object:
    """A module-scoped `app_client` fixture: the app over the module's `registry`, redirects not followed."""

    def app_client(registry: TenantRegistry) -> Iterator[TestClient]:
        with TestClient(create_app(registry), follow_redirects=False) as client:
            yield client

    return pytest.fixture(scope="module", name="app_client")(app_client)


def tenant_fixture(site: SiteDefinition, seed: int = 1) -> object:
    """A `tenant` fixture: a fresh tenant of `site` with that seed for each test, dropped after it."""

    def tenant(registry: TenantRegistry) -> Iterator[Tenant]:
        tenant = registry.create(site.name, seed)
        yield tenant
        registry.drop(tenant)

    return pytest.fixture(name="tenant")(tenant)


def browser_fixture() -> object:
    """A `browser` fixture: a Browser for the test's `tenant` through the module's `app_client`."""

    def browser(app_client: TestClient, tenant: Tenant) -> Browser:
        return Browser(app_client, tenant)

    return pytest.fixture(name="browser")(browser)


class SiteFixtures(NamedTuple):
    """A site test module's fixtures, each registered under its field's name."""

    registry: object
    app_client: object
    tenant: object
    browser: object


def site_fixtures(site: SiteDefinition, seed: int = 1) -> SiteFixtures:
    """The `registry`, `app_client`, `tenant` and `browser` fixtures of a module that tests `site`."""
    return SiteFixtures(registry_fixture(site), app_client_fixture(), tenant_fixture(site, seed), browser_fixture())


def seeded_fixture(site: SiteDefinition, seeds: tuple[int, ...]) -> object:
    """A module-scoped `seeded` fixture: the seeded state of a fresh tenant of `site` for each of `seeds`."""

    def seeded(registry: TenantRegistry) -> dict[int, StateSnapshot]:
        states = {}
        for seed in seeds:
            fresh = registry.create(site.name, seed)
            states[seed] = fresh.snapshot()
            registry.drop(fresh)
        return states

    return pytest.fixture(scope="module", name="seeded")(seeded)


def reader_fixture(site: SiteDefinition, seed: int = 1) -> object:
    """A module-scoped `reader` fixture: a Browser of one tenant of `site` shared by the module's tests that only read
    pages (page loads change nothing)."""

    def reader(app_client: TestClient, registry: TenantRegistry) -> Iterator[Browser]:
        shared = registry.create(site.name, seed)
        yield Browser(app_client, shared)
        registry.drop(shared)

    return pytest.fixture(scope="module", name="reader")(reader)


def last_listings(tenant: Tenant) -> list[tuple[str, dict[str, object]]]:
    """The whole listings with their filter the tenant's latest page showed: (table, filter) each (a searched list,
    its filter unstated, is `last_searched`'s)."""
    shown = tenant.operations()[-1].shown
    assert shown is not None
    return [(listing.table, dict(listing.where)) for listing in shown.listings if not listing.searched]


def last_searched(tenant: Tenant) -> list[str]:
    """The tables of the searched listings the tenant's latest page showed (a search held every row it showed)."""
    shown = tenant.operations()[-1].shown
    assert shown is not None
    return [listing.table for listing in shown.listings if listing.searched]
