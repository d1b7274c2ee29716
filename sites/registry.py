"""The one place where sites are registered: add a new site's definition to `SITES`."""

from __future__ import annotations

from sites.helpdesk import HELPDESK
from sites.inventory import INVENTORY
from sites.invoices import INVOICES
from sites.kit.site import SiteDefinition
from sites.ledger import LEDGER
from sites.webmail import WEBMAIL

SITES: dict[str, SiteDefinition] = {site.name: site for site in (HELPDESK, INVENTORY, INVOICES, LEDGER, WEBMAIL)}


def site_definitions() -> dict[str, SiteDefinition]:
    """Every known site by name (a copy, so callers cannot change the registry by accident)."""
    return dict(SITES)
