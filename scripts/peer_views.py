"""Make the peer's views of the token comparison's page set (computerops/bench/peer_tokens.py) and write them to
tests/fixtures/peers/browser-use.json.

    python -m venv /tmp/peer && /tmp/peer/bin/pip install browser-use
    .venv/bin/python scripts/peer_views.py --peer-python /tmp/peer/bin/python

The page set is served and each page opened in turn in a Chromium with a debugging port, where the adapter observes
it and browser-use (scripts/browser_use_view.py, in its own virtual environment) reads the same tab over CDP. Then
prints the comparison with the adapter's observations and where the adapter's characters go.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from pathlib import Path

from playwright.async_api import async_playwright

from adapter.browser import find_chromium
from computerops.bench.peer_tokens import PEER_VIEWS, PeerView, PeerViews, compare, fixture_sha256, page_set

HOW = ("DomService(session).get_serialized_dom_tree() then llm_representation(), its defaults, on the tab the "
       "adapter observed, right after the adapter's observation (scripts/browser_use_view.py)")
MARK = "VIEW "


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _answer(process: asyncio.subprocess.Process, mark: str) -> str:
    """The peer's next line that begins with `mark` (browser-use logs on stdout too), without the mark."""
    assert process.stdout is not None
    while line := (await process.stdout.readline()).decode("utf-8"):
        if line.startswith(mark):
            return line[len(mark):].rstrip("\n")
    raise SystemExit(f"the peer ended without a {mark.strip()} line (exit {await process.wait()})")


async def main(peer_python: str, out: Path) -> None:
    port = _free_port()
    viewer = Path(__file__).with_name("browser_use_view.py")
    ours: dict[str, str] = {}
    theirs: dict[str, str] = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=find_chromium(playwright.chromium.executable_path),
                                                   args=[f"--remote-debugging-port={port}"])
        try:
            async with page_set(browser) as pages:
                process = await asyncio.create_subprocess_exec(
                    peer_python, str(viewer), f"http://127.0.0.1:{port}", stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE)
                assert process.stdin is not None
                peer = await _answer(process, "PEER ")
                for page in pages:
                    async with page.opened() as driver:
                        ours[page.page] = (await driver.observe()).text
                        cdp = await driver.page.context.new_cdp_session(driver.page)
                        target = (await cdp.send("Target.getTargetInfo"))["targetInfo"]["targetId"]
                        await cdp.detach()
                        process.stdin.write(f"{target}\n".encode())
                        theirs[page.page] = json.loads(await _answer(process, MARK))
                    print(f"{page.page}: adapter {len(ours[page.page])} characters, peer {len(theirs[page.page])}")
                process.stdin.close()
                await process.wait()
        finally:
            await browser.close()
    views = PeerViews(peer=peer, how=HOW, pages=[
        PeerView(page=page, text=theirs[page], source_sha256=fixture_sha256(page)) for page in ours])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(views.model_dump_json(indent=1) + "\n", encoding="utf-8")
    print(compare(ours, views).model_dump_json(indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="Python of a virtual environment with browser-use")
    parser.add_argument("--out", type=Path, default=PEER_VIEWS)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.peer_python, arguments.out))
