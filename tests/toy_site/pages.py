"""The toy site's pages: its templates over the kit's, and the notices its pages show after a redirect."""

from __future__ import annotations

from pathlib import Path

from sites.kit.notices import Notices
from sites.kit.pages import SitePages

TEMPLATES = Path(__file__).parent / "templates"
PAGES = SitePages(TEMPLATES)
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
PREFIX = "/toy"
LIST_NOTICES = Notices({"added": "Item added."})
ITEM_NOTICES = Notices({"saved": "Quantity saved."})
