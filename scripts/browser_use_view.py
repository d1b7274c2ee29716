"""browser-use's DOM serialisation of tabs of a running Chromium: run by scripts/peer_views.py with the Python of a
virtual environment where browser-use is installed (it is no dependency of this project).

    PEER_PYTHON scripts/browser_use_view.py CDP_URL

Reads a CDP target id a line from stdin; for each, writes to stdout `VIEW ` and a JSON string of that tab's view:
what browser-use's agent reads as the page's elements (`DomService.get_serialized_dom_tree()` then
`llm_representation()`, its defaults: paint-order filtering, elements up to 1000 px below the window). The first
line it writes is `PEER ` and its name and version.
"""

import asyncio
import json
import sys
from importlib.metadata import version

from browser_use import BrowserSession
from browser_use.browser.events import SwitchTabEvent
from browser_use.dom.service import DomService

FOCUS_TRIES = 1200
MARK = "VIEW "


async def main(cdp_url: str) -> None:
    session = BrowserSession(cdp_url=cdp_url)
    await session.start()
    print(f"PEER browser-use {version('browser-use')}", flush=True)
    try:
        loop = asyncio.get_running_loop()
        while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            for attempt in range(FOCUS_TRIES):  # asked again now and then: closing the last tab moves its focus
                if session.agent_focus_target_id == line:
                    break
                if attempt % 40 == 0:
                    await session.event_bus.dispatch(SwitchTabEvent(target_id=line))
                await asyncio.sleep(0.05)
            if session.agent_focus_target_id != line:
                raise RuntimeError(f"browser-use did not focus the tab {line}")
            state, _, _ = await DomService(session).get_serialized_dom_tree()
            print(MARK + json.dumps(state.llm_representation()), flush=True)
    finally:
        await session.stop()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
