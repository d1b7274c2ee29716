"""Which URLs are pages of the site under test: one origin and one path prefix, read the way the browser reads them.

The site under test is `origin` (e.g. `http://127.0.0.1:41234`) under the path prefix `prefix` (e.g.
`/helpdesk/`); the sites server serves several sites on one origin, so the prefix matters as much as the origin.
URLs are parsed with ada (`ada-url`, the WHATWG URL parser Node uses), so this check and Chromium agree on what a
URL means: dot segments and `%2e` segments resolved, backslashes read as slashes, tabs and newlines dropped,
default ports removed, scheme and host lower-cased, IDNA applied. One check serves both the model's `navigate`
and every request a contained browser context makes (adapter/containment.py, adapter/egress.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from ada_url import join_url, parse_url

MAX_URL_CHARS = 4096
"""Longest URL the model may ask to navigate to; longer is refused unparsed."""
WEB_SCHEMES = frozenset({"http:", "https:"})
_SOCKET_SCHEMES = {"ws:": "http:", "wss:": "https:"}


class BadURL(ValueError):
    """The model's URL cannot be read as a URL at all (empty, too long, not parseable)."""


@dataclass(frozen=True)
class SiteScope:
    """The site under test: an origin and a path prefix under it (ending in `/`)."""

    origin: str
    prefix: str

    def __post_init__(self) -> None:
        parsed = parse_url(self.origin, attributes=("origin",))
        if not self.prefix.startswith("/") or not self.prefix.endswith("/"):
            raise ValueError(f"a site prefix starts and ends with '/', not {self.prefix!r}")
        object.__setattr__(self, "origin", str(parsed["origin"]))

    @property
    def start(self) -> str:
        """The prefix as an absolute URL: what relative URLs resolve against when the page is not on the site."""
        return self.origin + self.prefix

    def problem(self, url: str) -> str | None:
        """Why `url` (absolute) is not a page of the site, in words for the model; None when it is.

        A page of the site is an http(s) URL with this origin, no user name or password, and a path equal to the
        prefix (with or without its final slash) or under it, none of whose segments the server would decode into
        a separator or a dot segment (`%2F`, `%5C`, `%2e%2e` left encoded)."""
        try:
            parts = parse_url(url, attributes=("protocol", "username", "password", "origin", "pathname"))
        except ValueError:
            return "it is not a valid URL"
        scheme = str(parts["protocol"])
        if scheme not in WEB_SCHEMES:
            return f"a {scheme} URL is not a page of the site"
        if parts["username"] or parts["password"]:
            return "it carries a user name or password"
        if parts["origin"] != self.origin:
            return f"it is on another origin ({parts['origin']}); the site is {self.origin}"
        path = str(parts["pathname"])
        if not (path.startswith(self.prefix) or path == self.prefix.rstrip("/")):
            return f"its path {_short(path)} is outside {self.prefix}"
        for segment in path.split("/"):
            decoded = unquote(segment)
            if decoded in (".", "..") or "/" in decoded or "\\" in decoded:
                return f"its path {_short(path)} has an encoded separator or dot segment ({_short(segment)})"
        return None

    def socket_problem(self, url: str) -> str | None:
        """`problem` for a WebSocket URL (ws: and wss: read as http: and https:)."""
        scheme, _, rest = url.partition(":")
        web = _SOCKET_SCHEMES.get(scheme.lower() + ":")
        if web is None:
            return f"a {scheme}: URL is not a WebSocket URL"
        return self.problem(web + rest)

    def navigation_target(self, raw: str, current: str) -> str:
        """The absolute URL the model's `navigate` means, resolved against the current page (against the prefix
        when the current page is not on the site) and normalised as the browser will; BadURL when it is no URL."""
        if len(raw) > MAX_URL_CHARS:
            raise BadURL(f"the URL is {len(raw)} characters long; at most {MAX_URL_CHARS} are accepted")
        if not raw.strip():
            raise BadURL("the URL is empty")
        base = current if self.problem(current) is None else self.start
        try:
            return join_url(base, raw)
        except ValueError:
            raise BadURL(f"{_short(raw)!r} is not a valid URL") from None

    def path_of(self, url: str) -> str:
        """Path and query of a URL on the site's origin (what observations show); other URLs stay whole."""
        try:
            parts = parse_url(url, attributes=("origin", "pathname", "search"))
        except ValueError:
            return url
        if parts["origin"] != self.origin:
            return url
        return f"{parts['pathname']}{parts['search']}"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
