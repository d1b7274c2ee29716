"""What ends a local Ray instance with its driver, however the driver ends (`python -m computerops.runs.ray_reaper
SESSION DRIVER_PID RAY_PACKAGE_DIR`, started by `RayExecutor` right after `ray.init(address="local")`).

Ray shares the fate of the processes the driver starts itself (the GCS, the raylet: the kernel kills them when the
driver dies), but not of those the raylet starts: after a driver's SIGKILL its runtime-env and dashboard agents and
its workers lived on. This process holds the driver's lifeline (computerops/core/lifeline.py) in a session of its
own; when the lifeline is cut it SIGKILLs every Ray process of the Ray session (a Ray process: one Ray renamed,
`ray::...`, or one running a program of the Ray package; of the session: its command line names the session, or it
holds a file of the session's directory open: Ray renames its agents and workers but their output goes to the
session's logs), with their descendants (a worker's Chromium), and exits. Never anything else: an operator's `tail -f`
of a session log, or an editor open on one, is no Ray process. After a clean `ray.shutdown()` it finds nothing left
to end."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import psutil

from computerops.core.lifeline import lifeline_fd, wait_for_cut

RENAMED_PREFIX = "ray::"
"""How Ray renames the processes it starts from Python (`ray::RuntimeEnvAgent`, `ray::IDLE`, `ray::Worker.run`)."""


def _is_ray(cmdline: list[str], ray_package: Path) -> bool:
    """Whether a command line is a Ray process's: renamed by Ray, or running a program or module of the Ray package
    (the raylet, the GCS, the log monitor, a default worker before it renames itself)."""
    if cmdline and cmdline[0].startswith(RENAMED_PREFIX):
        return True
    packages = {f"{ray_package}/", f"{ray_package.resolve()}/"}  # as Ray spelled the path it started, or resolved
    return any(part.startswith(package) for part in cmdline for package in packages)


def _names_session(process: psutil.Process, session: str, ray_package: Path) -> bool:
    """Whether `process` is one of the session's Ray processes: a Ray process (`_is_ray`) whose command line names the
    session, or that holds a file under the session's directory open (Ray renames its agents and workers,
    `ray::RuntimeEnvAgent`, so their command lines lose the session; their output stays redirected into the
    session's logs)."""
    with contextlib.suppress(psutil.Error):
        cmdline = process.cmdline()
        if not _is_ray(cmdline, ray_package):
            return False
        if any(session in part for part in cmdline):
            return True
        return any(session in opened.path for opened in process.open_files())
    return False


def session_processes(session: str, *, besides: set[int], ray_package: Path) -> list[psutil.Process]:
    """The live Ray processes of the Ray session `session` (but those in `besides`), and all their descendants."""
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter():
        if process.pid not in besides and _names_session(process, session, ray_package):
            found[process.pid] = process
            with contextlib.suppress(psutil.Error):
                found.update({child.pid: child for child in process.children(recursive=True)})
    for pid in besides:
        found.pop(pid, None)
    return list(found.values())


def reap(session: str, *, besides: set[int], ray_package: Path) -> int:
    """SIGKILL what is left of the session; how many processes that was."""
    left = session_processes(session, besides=besides, ray_package=ray_package)
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    return len(left)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or not args[0].startswith("session_") or not args[1].isdigit() or not Path(args[2]).is_dir():
        print("usage: python -m computerops.runs.ray_reaper SESSION_NAME DRIVER_PID RAY_PACKAGE_DIR (started by the "
              "Ray executor, holding its lifeline)", file=sys.stderr)
        return 2
    fd = lifeline_fd()
    if fd is None:
        print("ray_reaper: no lifeline was passed (COMPUTEROPS_LIFELINE_FD)", file=sys.stderr)
        return 2
    wait_for_cut(fd)
    # Never the driver: one that let the reaper go after its `ray.shutdown()` lives on, with the session's driver
    # logs still open.
    reap(args[0], besides={psutil.Process().pid, int(args[1])}, ray_package=Path(args[2]).absolute())
    return 0


if __name__ == "__main__":
    sys.exit(main())
