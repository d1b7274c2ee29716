"""Pure tests of which link targets the catalog crawl follows."""

from __future__ import annotations

import pytest

from computerops.catalog.crawl import _site_path, page_kind

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


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/inventory/products/SKU-1001", ("/inventory/products/*", ())),
        ("/inventory/products/SKU-1450", ("/inventory/products/*", ())),
        ("/helpdesk/customers/42", ("/helpdesk/customers/*", ())),
        ("/inventory/products", ("/inventory/products", ())),
        ("/inventory/products?page=2", ("/inventory/products", ("page",))),
        ("/inventory/products?status=active&category=Tools&page=7",
         ("/inventory/products", ("category", "page", "status"))),
        ("/inventory/products?q=", ("/inventory/products", ("q",))),
        ("/inventory/", ("/inventory/", ())),
    ],
)
def test_a_pages_kind_is_its_path_with_records_as_id_and_its_query_names(path: str, kind: object) -> None:
    """The crawl follows links to a bounded number of pages of each kind: record pages of one list are one kind,
    and so are the pages of one list with the same filters."""
    assert page_kind(path) == kind
