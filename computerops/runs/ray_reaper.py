"""What ends a local Ray instance with its driver, however the driver ends (`python -m computerops.runs.ray_reaper
SESSION`, started by `RayExecutor` right after `ray.init(address="local")`).

Ray shares the fate of the processes the driver starts itself (the GCS, the raylet: the kernel kills them when the
driver dies), but not of those the raylet starts: after a driver's SIGKILL its runtime-env and dashboard agents and
its workers lived on. This process holds the driver's lifeline (computerops/core/lifeline.py) in a session of its
own; when the lifeline is cut it SIGKILLs every process whose command line names the Ray session (each Ray process is
started with its session's name or directory), with their descendants (a worker's Chromium), and exits. After a clean
`ray.shutdown()` it finds nothing left to end."""

from __future__ import annotations

import contextlib
import sys

import psutil

from computerops.core.lifeline import lifeline_fd, wait_for_cut


def session_processes(session: str, *, besides: int) -> list[psutil.Process]:
    """The live processes whose command line names `session` (but `besides`), and all their descendants."""
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if process.pid != besides and any(session in part for part in cmdline):
            found[process.pid] = process
            with contextlib.suppress(psutil.Error):
                found.update({child.pid: child for child in process.children(recursive=True)})
    found.pop(besides, None)
    return list(found.values())


def reap(session: str, *, besides: int) -> int:
    """SIGKILL what is left of the session; how many processes that was."""
    left = session_processes(session, besides=besides)
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    return len(left)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].startswith("session_"):
        print("usage: python -m computerops.runs.ray_reaper SESSION_NAME (started by the Ray executor, holding its "
              "lifeline)", file=sys.stderr)
        return 2
    fd = lifeline_fd()
    if fd is None:
        print("ray_reaper: no lifeline was passed (COMPUTEROPS_LIFELINE_FD)", file=sys.stderr)
        return 2
    wait_for_cut(fd)
    reap(args[0], besides=psutil.Process().pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
