"""The one place that builds browsers: which Chromium to run, and how to launch it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from playwright.async_api import Browser, Playwright

ENV_VAR = "COMPUTEROPS_CHROMIUM"
# Chromium's headless shell first: the same engine without the desktop browser around it, and the build Playwright
# itself runs headless. It needs far less CPU per page than the full browser (docs/architecture.md, "Browser").
SYSTEM_CHROMIUMS: tuple[str, ...] = (
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
)
LAUNCH_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # WebRTC would send UDP (STUN, TURN) around the egress proxy of a contained context (adapter/containment.py);
    # with this policy it may only use the proxy, which refuses it.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)


class ChromiumNotFound(RuntimeError):
    """No Chromium to run: neither Playwright's own build nor a system one."""


def find_chromium(
    bundled: str | None,
    *,
    env: Mapping[str, str] | None = None,
    candidates: Sequence[str] = SYSTEM_CHROMIUMS,
) -> str | None:
    """The Chromium executable to launch; None means "use Playwright's own build".

    `bundled` is Playwright's expected executable path (`playwright.chromium.executable_path`).
    An explicit `COMPUTEROPS_CHROMIUM` wins over everything and must exist; otherwise Playwright's
    build is used when installed, else the first existing system Chromium.
    """
    env = os.environ if env is None else env
    explicit = env.get(ENV_VAR, "").strip()
    if explicit:
        if Path(explicit).is_file():
            return explicit
        raise ChromiumNotFound(f"{ENV_VAR}={explicit!r} does not name an existing file.")
    if bundled and Path(bundled).is_file():
        return None
    for candidate in candidates:
        if Path(candidate).is_file():
            return candidate
    tried = ", ".join([f"Playwright's Chromium ({bundled})", f"${ENV_VAR} (unset)", *candidates])
    raise ChromiumNotFound(
        f"No Chromium found. Tried: {tried}. Install one with `apt-get install chromium` "
        f"or `playwright install chromium`, or set {ENV_VAR} to a Chromium executable."
    )


def chromium_executable(playwright: Playwright) -> str | None:
    """`find_chromium` for this Playwright installation."""
    return find_chromium(playwright.chromium.executable_path)


async def launch_browser(playwright: Playwright) -> Browser:
    """A headless Chromium with the benchmark's launch flags."""
    return await playwright.chromium.launch(
        executable_path=chromium_executable(playwright),
        headless=True,
        args=list(LAUNCH_ARGS),
    )


def describe_chromium(playwright: Playwright, browser: Browser) -> str:
    """The running Chromium's version and build, as manifests and bench reports record it, e.g.
    `156.0.8078.108 (/usr/lib/chromium/chromium-headless-shell)`; Playwright's own build is named as such."""
    executable = chromium_executable(playwright) or "Playwright's own"
    return f"{browser.version} ({executable})"


async def _report_executable() -> str:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        return chromium_executable(playwright) or f"Playwright's own ({playwright.chromium.executable_path})"


if __name__ == "__main__":  # `python -m adapter.browser`: which Chromium would run; exit 1 if none
    import asyncio
    import sys

    try:
        print(asyncio.run(_report_executable()))
    except ChromiumNotFound as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
