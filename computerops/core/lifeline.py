"""A child process that ends with the process that started it, however that one ends (a SIGKILL runs no cleanup).

The parent makes a pipe, keeps its write end (not inheritable: no other child holds it) and passes the read end to
the child (`pass_fds`, its number in LIFELINE_VARIABLE). The child holds it (`hold_lifeline`): a daemon thread reads
it, and a read that returns means every write end is closed, the parent's among them: the parent has ended or has
let the child go. The child then SIGKILLs its own process group where it leads one (started with
`start_new_session=True`: the group holds its Playwright driver and Chromium), else only itself. The kernel closes a
killed process's descriptors, so this needs no polling and no Linux-only `prctl`."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Mapping

LIFELINE_VARIABLE = "COMPUTEROPS_LIFELINE_FD"


class Lifeline:
    """The parent's side: `pass_fds` and `env` for the child's start, `started()` once it has, `release()` when the
    child is done with (closing the write end: a child still running then ends)."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()  # both not inheritable (PEP 446); pass_fds makes the read end so
        self._released = False

    @property
    def pass_fds(self) -> tuple[int]:
        if self._read < 0:
            raise RuntimeError("the lifeline's read end was handed over already")
        return (self._read,)

    def env(self) -> dict[str, str]:
        return {LIFELINE_VARIABLE: str(self.pass_fds[0])}

    def started(self) -> None:
        """The child has its copy of the read end: this process's copy is closed (never read here)."""
        self._close_read()

    def release(self) -> None:
        """Close what this process still holds of the lifeline, each descriptor once: a number closed before may
        already name another file of this process (another episode's lifeline, a socket)."""
        if self._released:
            return
        self._released = True
        self._close_read()
        write, self._write = self._write, -1
        os.close(write)

    def _close_read(self) -> None:
        read, self._read = self._read, -1
        if read >= 0:
            os.close(read)


def lifeline_fd(environ: Mapping[str, str] | None = None) -> int | None:
    """The lifeline this process was given (checked open), or None."""
    given = (os.environ if environ is None else environ).get(LIFELINE_VARIABLE)
    if given is None:
        return None
    fd = int(given)
    os.fstat(fd)  # a number that is no open descriptor is refused here, not silently never watched
    return fd


def wait_for_cut(fd: int) -> None:
    """Block until the parent's end of the lifeline closes (the parent ended, or let this process go)."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1):  # the parent never writes; a byte is ignored, EOF (b"") is the cut
            pass


def _end_when_cut(fd: int) -> None:
    wait_for_cut(fd)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def hold_lifeline(environ: Mapping[str, str] | None = None) -> bool:
    """In the child: end this process (and the group it leads) when the parent's end of the lifeline closes. False
    where no lifeline was passed (a harness started by hand)."""
    fd = lifeline_fd(environ)
    if fd is None:
        return False
    threading.Thread(target=_end_when_cut, args=(fd,), name="lifeline", daemon=True).start()
    return True
