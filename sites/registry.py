"""The one place where sites are registered: add a new site's definition to `SITES`.

Everything that serves or checks sites reads this registry when it starts: a `tenant_registry()` (so every run,
`tasks check`, `corpus record` and replay), `create_app` through it, and the task loader's check that a task's site
and columns exist (`tasks.catalog.site_schemas`). `registered` adds sites for a while, so that a site that is not
one of the product's (the test folder's `tests/toy_site`) gets the same treatment without being listed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sites.helpdesk import HELPDESK
from sites.hrdesk import HRDESK
from sites.inventory import INVENTORY
from sites.invoices import INVOICES
from sites.kit import seeded_cache
from sites.kit.site import SiteDefinition
from sites.kit.tenancy import TenantRegistry
from sites.ledger import LEDGER
from sites.webmail import WEBMAIL

__all__ = ["SITES", "SiteDefinition", "registered", "shipped", "site_definitions", "tenant_registry"]

SITES: dict[str, SiteDefinition] = {
    site.name: site for site in (HELPDESK, HRDESK, INVENTORY, INVOICES, LEDGER, WEBMAIL)
}
_SHIPPED = dict(SITES)
seeded_cache.mark_shipped(_SHIPPED.values())  # only these definitions' seedings are kept on disk


def shipped(name: str) -> bool:
    """Whether the site registered under `name` now is the product's own, as shipped (not one `registered` added,
    nor a replacement a test put in `SITES`)."""
    return name in _SHIPPED and SITES.get(name) is _SHIPPED[name]


def site_definitions() -> dict[str, SiteDefinition]:
    """Every known site by name (a copy, so callers cannot change the registry by accident)."""
    return dict(SITES)


def tenant_registry(root: Path | None = None) -> TenantRegistry:
    """A tenant registry of every site registered now (`registered` blocks included) under `root` (without one, a
    scratch directory of its own)."""
    return TenantRegistry(root, sites=SITES)


@contextmanager
def registered(*extra: SiteDefinition) -> Iterator[dict[str, SiteDefinition]]:
    """The registry with the `extra` sites added until the block ends, then as it was; yields every known site.

    Only what starts inside the block sees them (a `TenantRegistry` keeps the sites it was made with). A name that
    is already registered, or given twice, is a ValueError and registers nothing.
    """
    names = [site.name for site in extra]
    taken = sorted({name for name in names if name in SITES or names.count(name) > 1})
    if taken:
        raise ValueError(f"sites already registered: {', '.join(taken)}")
    SITES.update((site.name, site) for site in extra)
    try:
        yield site_definitions()
    finally:
        for name in names:
            del SITES[name]
