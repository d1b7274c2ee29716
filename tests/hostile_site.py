"""Hostile pages for the containment tests: one page per way page content can try to leave the site, served on the
site's own origin, and a second loopback origin that records everything that reaches it.

`serve_arena()` starts both. The site (`/site/` on one port) serves `/site/hostile/<name>` from `HOSTILE_PAGES`,
plus the targets those pages use: redirects out (`/site/redirect-out` and a chain to it), an attachment, a service
worker script, `/site/ok.html`. Paths that must never be requested start with `/site/never-` or lie outside
`/site/` (`/elsewhere/...`); the site records every request (method, path, Host, Cookie). The other origin (another
port of 127.0.0.1) accepts TCP connections and UDP datagrams on one port number and records each, whatever it is:
an HTTP request, a preconnect, a WebSocket, a STUN packet.

Pages are generated where the escape is the same act on a different URL (`ESCAPING_URLS` x link, fetch, form,
frame, image, window), and written out where the act itself is the escape. In page text `@OTHER@` becomes the
other origin, `@OTHERPORT@` its port and `@SITEPORT@` the site's port.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from adapter.transcript import Kind


@dataclass(frozen=True)
class Trigger:
    """What the model does on the page to set the escape off: `click` a control by name, or `press` a key on it."""

    action: str
    name: str
    key: str = ""


@dataclass(frozen=True)
class HostilePage:
    name: str
    body: str
    kinds: frozenset[Kind] = frozenset()
    """Kinds of blocked record that the attempt may be recorded as (one of them must be); empty: nothing to
    record (the browser itself never sends anything, or the page only changes its own address)."""
    trigger: Trigger | None = None
    moves_address: bool = False
    """The page's script moves its address off the site without a request: the model is told, nothing recorded."""


def _page(name: str, body: str, *kinds: Kind, trigger: Trigger | None = None, moves: bool = False) -> HostilePage:
    return HostilePage(name=name, body=body, kinds=frozenset(kinds), trigger=trigger, moves_address=moves)


ESCAPING_URLS = {
    "other-origin": "@OTHER@/x",
    "same-path-other-port": "http://127.0.0.1:@OTHERPORT@/site/ok.html",
    "other-host-same-port": "http://localhost:@SITEPORT@/site/never-localhost",
    "upper-case-other-port": "HTTP://127.0.0.1:@OTHERPORT@/SITE/",
    "other-path": "/elsewhere/x",
    "prefix-lookalike": "/sitex/never",
    "dot-segments": "/site/../elsewhere/dots",
    "encoded-dot-segments": "/site/%2e%2E/elsewhere/encoded-dots",
    "encoded-slash": "/site/..%2Felsewhere%2Fslash",
    "encoded-backslash": "/site/..%5Celsewhere",
    "backslashes": "/site/..\\elsewhere\\backslash",
    "userinfo": "http://user:secret@127.0.0.1:@SITEPORT@/site/never-userinfo",
    "scheme-relative": "//127.0.0.1:@OTHERPORT@/site/",
}
"""Ways to name somewhere that is not the site; each is tried as a link, a fetch, and a few as a form, a frame,
an image and a window."""


def _generated() -> list[HostilePage]:
    pages: list[HostilePage] = []
    for label, url in ESCAPING_URLS.items():
        pages.append(_page(f"link-{label}", f'<a href="{url}">Go there</a>', "navigation",
                           trigger=Trigger("click", "Go there")))
        script = json.dumps(url)  # as a JavaScript string: its backslashes stay backslashes
        refused = label == "userinfo"  # fetch itself refuses a URL with credentials: nothing is sent
        pages.append(_page(f"fetch-{label}", f'<script>fetch({script}, {{mode: "no-cors"}}).catch(() => 0)</script>',
                           *(() if refused else ("fetch",))))
    for label in ("other-origin", "other-path", "encoded-slash"):
        url = ESCAPING_URLS[label]
        pages.append(_page(f"form-post-{label}",
                           f'<form method="post" action="{url}"><input name="q" value="1"><button>Send</button></form>',
                           "navigation", trigger=Trigger("click", "Send")))
        pages.append(_page(f"iframe-{label}", f'<iframe src="{url}"></iframe>', "iframe"))
        pages.append(_page(f"image-{label}", f'<img src="{url}" alt="x">', "subresource"))
        pages.append(_page(f"window-open-{label}", f"<script>window.open({json.dumps(url)})</script>", "popup"))
    return pages


_WRITTEN = [
    # Navigations of the page itself.
    _page("javascript-url", "<a href=\"javascript:location='@OTHER@/js'\">Run it</a>", "navigation",
          trigger=Trigger("click", "Run it")),
    _page("base-href", '<base href="@OTHER@/"><a href="relative">Relative link</a>', "navigation",
          trigger=Trigger("click", "Relative link")),
    _page("form-get", '<form action="@OTHER@/collect"><input name="q" value="1"><button>Search</button></form>',
          "navigation", trigger=Trigger("click", "Search")),
    _page("form-enter", '<form method="post" action="@OTHER@/enter"><label>Note <input name="n"></label></form>',
          "navigation", trigger=Trigger("press", "Note", "Enter")),
    _page("form-formaction",
          '<form action="/site/ok.html"><button formaction="@OTHER@/formaction" formmethod="post">Save</button></form>',
          "navigation", trigger=Trigger("click", "Save")),
    _page("meta-refresh", '<meta http-equiv="refresh" content="0;url=@OTHER@/meta">', "navigation"),
    _page("meta-refresh-other-path", '<meta http-equiv="refresh" content="0;url=/elsewhere/meta">', "navigation"),
    _page("timer-redirect", '<script>setTimeout(() => { location.href = "@OTHER@/timer"; }, 30)</script>',
          "navigation"),
    _page("timer-loop", '<script>setInterval(() => { location.href = "@OTHER@/loop"; }, 20)</script>',
          "navigation"),
    _page("location-replace", '<script>location.replace("/elsewhere/replace")</script>', "navigation"),
    _page("location-during-load", '<script>location.replace("/site/redirect-out")</script><p>Still parsing</p>',
          "navigation"),
    _page("top-from-frame", "<iframe srcdoc=\"<script>top.location = '@OTHER@/top'</script>\"></iframe>",
          "navigation"),
    _page("redirect-out", '<a href="/site/redirect-out">Continue</a>', "navigation",
          trigger=Trigger("click", "Continue")),
    _page("redirect-chain", '<a href="/site/redirect-chain">Continue</a>', "navigation",
          trigger=Trigger("click", "Continue")),
    _page("redirect-other-path", '<a href="/site/redirect-elsewhere">Continue</a>', "navigation",
          trigger=Trigger("click", "Continue")),
    _page("form-post-redirect", '<form method="post" action="/site/redirect-out"><button>Pay</button></form>',
          "navigation", trigger=Trigger("click", "Pay")),
    # New windows.
    _page("link-target-blank", '<a href="/site/never-blank" target="_blank">New window</a>', "popup",
          trigger=Trigger("click", "New window")),
    _page("link-noopener", '<a href="/site/never-noopener" target="_blank" rel="noopener noreferrer">Tab</a>',
          "popup", trigger=Trigger("click", "Tab")),
    _page("link-shift-enter", '<a href="/site/never-shift">Details</a>', "popup",
          trigger=Trigger("press", "Details", "Shift+Enter")),
    _page("link-control-enter", '<a href="/site/never-control">Details</a>', "popup",
          trigger=Trigger("press", "Details", "Control+Enter")),
    _page("form-target-blank", '<form action="/site/never-form" target="_blank"><button>Open</button></form>',
          "popup", trigger=Trigger("click", "Open")),
    _page("window-open-on-click", "<button onclick=\"window.open('/site/never-click')\">Pop</button>", "popup",
          trigger=Trigger("click", "Pop")),
    _page("window-open-noopener", '<script>window.open("/site/never-open", "_blank", "noopener")</script>', "popup"),
    # Downloads.
    _page("download-attribute", '<a href="/site/attachment" download>Download</a>', "download",
          trigger=Trigger("click", "Download")),
    _page("content-disposition", '<a href="/site/attachment">Report</a>', "download",
          trigger=Trigger("click", "Report")),
    _page("data-download", '<a href="data:text/plain,hello" download="x.txt">Save</a>', "download",
          trigger=Trigger("click", "Save")),
    # Requests of page script, and of the browser on the page's behalf.
    _page("xhr", '<script>const x = new XMLHttpRequest(); x.open("POST", "@OTHER@/xhr"); x.send("a=1")</script>',
          "fetch"),
    _page("event-source", '<script>new EventSource("@OTHER@/events")</script>', "fetch"),
    _page("beacon", '<script>navigator.sendBeacon("@OTHER@/beacon", "a=1")</script>', "beacon"),
    _page("beacon-other-path", '<script>navigator.sendBeacon("/elsewhere/beacon", "a=1")</script>', "beacon"),
    _page("link-ping", '<a href="/site/ok.html" ping="@OTHER@/ping">Pinged link</a>', "beacon",
          trigger=Trigger("click", "Pinged link")),
    _page("fetch-redirect", '<script>fetch("/site/redirect-out").catch(() => 0)</script>', "fetch"),
    _page("image-redirect", '<img src="/site/redirect-out" alt="x">', "subresource"),
    _page("subresources", '<script src="@OTHER@/s.js"></script><link rel="stylesheet" href="@OTHER@/s.css">'
          '<video src="@OTHER@/v.mp4"></video><audio src="@OTHER@/a.mp3"></audio>', "subresource"),
    _page("css-urls", '<style>@import url("@OTHER@/i.css"); body { background: url("@OTHER@/bg.png") }'
          ' @font-face { font-family: f; src: url("@OTHER@/f.woff") } p { font-family: f }</style><p>text</p>',
          "subresource"),
    _page("module-import", '<script type="module">import("@OTHER@/m.js").catch(() => 0)</script>', "subresource"),
    _page("object-data", '<object data="@OTHER@/object" type="text/html"></object>', "iframe", "subresource"),
    _page("link-prefetch", '<link rel="prefetch" href="@OTHER@/prefetch">', "prefetch"),
    _page("link-preload", '<link rel="preload" as="script" href="@OTHER@/preload.js">', "subresource"),
    _page("speculation-rules", '<script type="speculationrules">{"prefetch": [{"source": "list", "urls": '
          '["@OTHER@/speculative"]}], "prerender": [{"source": "list", "urls": ["/site/never-prerender"]}]}</script>',
          "prefetch"),
    _page("passive-hints", '<link rel="preconnect" href="@OTHER@"><link rel="dns-prefetch" href="//@OTHER@">'
          '<link rel="icon" href="@OTHER@/icon.png"><link rel="manifest" href="@OTHER@/manifest.json">'),
    _page("webrtc", '<script>const pc = new RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.1:@OTHERPORT@"},'
          ' {urls: "turn:127.0.0.1:@OTHERPORT@", username: "u", credential: "c"}]});'
          ' pc.createDataChannel("d"); pc.createOffer().then(o => pc.setLocalDescription(o));</script>'),
    # Things that outlive a request.
    _page("websocket", '<script>new WebSocket("ws://127.0.0.1:@OTHERPORT@/socket")</script>', "websocket"),
    _page("websocket-same-origin", '<script>new WebSocket("ws://" + location.host + "/site/socket")</script>',
          "websocket"),
    _page("worker-fetch", '<script>new Worker(URL.createObjectURL(new Blob('
          '["fetch(\\"@OTHER@/worker\\", {mode: \\"no-cors\\"})"])))</script>', "fetch"),
    _page("worker-websocket", '<script>new Worker(URL.createObjectURL(new Blob('
          '["new WebSocket(\\"ws://127.0.0.1:@OTHERPORT@/worker-socket\\")"])))</script>', "websocket", "tunnel"),
    _page("shared-worker-fetch", '<script>new SharedWorker(URL.createObjectURL(new Blob('
          '["fetch(\\"@OTHER@/shared\\", {mode: \\"no-cors\\"})"])))</script>', "fetch", "service_worker"),
    _page("service-worker", '<script>navigator.serviceWorker.register("/site/sw.js").catch(() => 0)</script>',
          "service_worker"),
    # Address changes without a request: reported, not recorded.
    _page("blob-document", '<script>location = URL.createObjectURL(new Blob(["<title>Forged</title>Forged"],'
          ' {type: "text/html"}))</script>', moves=True),
    _page("push-state", '<script>history.pushState({}, "", "/elsewhere/pushed")</script>', moves=True),
    _page("about-blank", '<script>setTimeout(() => { location = "about:blank"; }, 30)</script>', moves=True),
    _page("data-document", "<script>location = \"data:text/html,<title>Forged</title>\"</script>"),
]

HOSTILE_PAGES: dict[str, HostilePage] = {page.name: page for page in [*_generated(), *_WRITTEN]}

SERVICE_WORKER = ("self.addEventListener('fetch', e => e.respondWith(new Response('<title>Forged</title>forged', "
                  "{headers: {'content-type': 'text/html'}})));")
OK_PAGE = "<title>OK</title><h1>OK</h1><p>A page of the site.</p>"


@dataclass
class Arena:
    """The hostile site and the other origin, both on loopback."""

    site_port: int = 0
    other_port: int = 0
    site_requests: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(method, path with query, Host, Cookie) of every request that reached the site."""
    other_hits: list[bytes] = field(default_factory=list)
    """The first bytes of every TCP connection and UDP datagram that reached the other origin."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.site_port}"

    @property
    def other(self) -> str:
        return f"http://127.0.0.1:{self.other_port}"

    def fill(self, text: str) -> str:
        return (text.replace("@OTHERPORT@", str(self.other_port)).replace("@SITEPORT@", str(self.site_port))
                .replace("@OTHER@", self.other))

    def forbidden_site_requests(self, since: int = 0) -> list[tuple[str, str, str, str]]:
        """Requests that reached the site but were never allowed: outside /site/, /site/never-*, another Host."""
        with self.lock:
            seen = self.site_requests[since:]
        host = f"127.0.0.1:{self.site_port}"
        return [r for r in seen if not r[1].startswith("/site/") or r[1].startswith("/site/never-")
                or ".." in r[1] or "%2" in r[1].lower() or "%5" in r[1].lower() or r[2] != host]


def _site_handler(arena: Arena) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: str = "", content_type: str = "text/html", **headers: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            with arena.lock:
                arena.site_requests.append((self.command, self.path, self.headers.get("Host", ""),
                                            self.headers.get("Cookie", "")))
            path = urlsplit(self.path).path
            name = path.removeprefix("/site/hostile/")
            if name in HOSTILE_PAGES:
                self._send(200, f"<title>{name}</title>" + arena.fill(HOSTILE_PAGES[name].body))
            elif path == "/site/redirect-out":
                self._send(302, Location=f"{arena.other}/redirected")
            elif path == "/site/redirect-chain":
                self._send(302, Location="/site/redirect-out")
            elif path == "/site/redirect-elsewhere":
                self._send(302, Location="/elsewhere/redirected")
            elif path == "/site/attachment":
                self._send(200, "a,b\n1,2\n", "text/csv", Content_Disposition='attachment; filename="report.csv"')
            elif path == "/site/sw.js":
                self._send(200, SERVICE_WORKER, "text/javascript")
            else:
                self._send(200, OK_PAGE)

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            self._serve()

    return Handler


def _record_connections(arena: Arena, tcp: socket.socket) -> None:
    while True:
        try:
            connection, _ = tcp.accept()
        except OSError:
            return  # closed at the end of the arena
        with connection:
            connection.settimeout(1.0)
            first = b""
            with suppress(OSError):
                first = connection.recv(512)
            with arena.lock:
                arena.other_hits.append(first or b"<connection>")
            with suppress(OSError):
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 19\r\n"
                                   b"Connection: close\r\n\r\n<title>OTHER</title>")


def _record_datagrams(arena: Arena, udp: socket.socket) -> None:
    while True:
        try:
            datagram = udp.recv(2048)
        except OSError:
            return
        with arena.lock:
            arena.other_hits.append(b"<udp>" + datagram[:32])


@contextmanager
def serve_arena() -> Iterator[Arena]:
    """The hostile site and the recording other origin on free loopback ports, for the duration of the block."""
    arena = Arena()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(64)
    arena.other_port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", arena.other_port))
    site = ThreadingHTTPServer(("127.0.0.1", 0), _site_handler(arena))
    arena.site_port = site.server_address[1]
    threads = [threading.Thread(target=target, daemon=True) for target in (
        site.serve_forever, lambda: _record_connections(arena, tcp), lambda: _record_datagrams(arena, udp))]
    for thread in threads:
        thread.start()
    try:
        yield arena
    finally:
        site.shutdown()
        site.server_close()
        for sock in (tcp, udp):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
