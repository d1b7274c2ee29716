"""What ends a local Ray instance with its driver, however the driver ends (`python -m computerops.runs.ray_reaper
SESSION DRIVER_PID`, started by `RayExecutor` right after `ray.init(address="local")`).

Ray shares the fate of the processes the driver starts itself (the GCS, the raylet: the kernel kills them when the
driver dies), but not of those the raylet starts: after a driver's SIGKILL its runtime-env and dashboard agents and
its workers lived on. This process holds the driver's lifeline (computerops/core/lifeline.py) in a session of its
own; when the lifeline is cut it SIGKILLs every process of the Ray session (its command line names the session, or it
holds a file of the session's directory open: Ray renames its agents and workers but their output goes to the
session's logs), with their descendants (a worker's Chromium), and exits. After a clean
`ray.shutdown()` it finds nothing left to end."""

from __future__ import annotations

import contextlib
import sys

import psutil

from computerops.core.lifeline import lifeline_fd, wait_for_cut


def _names_session(process: psutil.Process, session: str) -> bool:
    """Whether `process` is one of the session's: its command line names it, or a file it holds open is under the
    session's directory (Ray renames its agents and workers, `ray::RuntimeEnvAgent`, so their command lines lose
    the session; their output stays redirected into the session's logs)."""
    with contextlib.suppress(psutil.Error):
        if any(session in part for part in process.cmdline()):
            return True
        return any(session in opened.path for opened in process.open_files())
    return False


def session_processes(session: str, *, besides: set[int]) -> list[psutil.Process]:
    """The live processes of the Ray session `session` (but those in `besides`), and all their descendants."""
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter():
        if process.pid not in besides and _names_session(process, session):
            found[process.pid] = process
            with contextlib.suppress(psutil.Error):
                found.update({child.pid: child for child in process.children(recursive=True)})
    for pid in besides:
        found.pop(pid, None)
    return list(found.values())


def reap(session: str, *, besides: set[int]) -> int:
    """SIGKILL what is left of the session; how many processes that was."""
    left = session_processes(session, besides=besides)
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    return len(left)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not args[0].startswith("session_") or not args[1].isdigit():
        print("usage: python -m computerops.runs.ray_reaper SESSION_NAME DRIVER_PID (started by the Ray executor, "
              "holding its lifeline)", file=sys.stderr)
        return 2
    fd = lifeline_fd()
    if fd is None:
        print("ray_reaper: no lifeline was passed (COMPUTEROPS_LIFELINE_FD)", file=sys.stderr)
        return 2
    wait_for_cut(fd)
    # Never the driver: one that let the reaper go after its `ray.shutdown()` lives on, with the session's driver
    # logs still open.
    reap(args[0], besides={psutil.Process().pid, int(args[1])})
    return 0


if __name__ == "__main__":
    sys.exit(main())
