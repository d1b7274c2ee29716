"""Pure tests of which link targets the catalog crawl follows."""

from __future__ import annotations

import pytest

from computerops.catalog.crawl import _site_path

ORIGIN = "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{ORIGIN}/helpdesk/tickets?status=open#top", "/helpdesk/tickets?status=open"),
        (f"{ORIGIN}/helpdesk", "/helpdesk"),
        (f"{ORIGIN}/helpdesk/", "/helpdesk/"),
        (f"{ORIGIN}/ledger/", None),
        (f"{ORIGIN}/helpdesk-old/", None),
        ("http://127.0.0.1:9000/helpdesk/", None),
        ("https://example.com/helpdesk/", None),
        ("javascript:void(0)", None),
        ("mailto:dana.reyes@example.com", None),
    ],
)
def test_only_pages_of_the_site_on_its_origin_are_followed(url: str, expected: str | None) -> None:
    assert _site_path(url, ORIGIN, "/helpdesk/") == expected
