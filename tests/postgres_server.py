"""A throwaway PostgreSQL server for the tests marked `postgres`: initdb'd in a temp dir, listening on 127.0.0.1 on a
free port (its unix socket in the temp dir too), stopped and removed after. PostgreSQL refuses to run as root: as root
the server runs as the `postgres` system user (Debian's package makes it), its temp dir owned by that user."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SETUP_HINT = "run `bash scripts/setup.sh --postgres` (installs Debian's postgresql package)"
SUPERUSER = "computerops"


def postgres_bin() -> Path | None:
    """The newest PostgreSQL's binaries folder holding initdb and pg_ctl (Debian: /usr/lib/postgresql/N/bin), or
    one on PATH; None when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                   if Path(p).parent.name.isdigit() else 0)
    for folder in [*reversed(found), *(str(Path(w).parent) for w in [shutil.which("initdb")] if w)]:
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_postgres() -> Iterator[str]:
    """Start a PostgreSQL server; yields the URL prefix `postgresql+psycopg://computerops@127.0.0.1:PORT/` (a
    database name completes it; the `postgres` database exists)."""
    binaries = postgres_bin()
    if binaries is None:
        raise FileNotFoundError(f"no PostgreSQL binaries (initdb, pg_ctl): {SETUP_HINT}")
    as_user: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    # Short: the socket's path must fit a sockaddr_un (about 107 bytes).
    root = Path(tempfile.mkdtemp(prefix="co-pg-"))
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    data, log = root / "data", root / "server.log"
    port = free_port()

    def pg(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, text=True, timeout=120)

    try:
        pg(str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-sync", "-E", "UTF8")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c synchronous_commit=off"
        try:
            pg(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}\n{_tail(log)}") from exc
        try:
            yield f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{port}/"
        finally:
            subprocess.run([*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                           capture_output=True, timeout=120, check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _tail(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-2000:]
    except OSError:
        return ""


def create_database(url: str, name: str) -> str:
    """Create database `name` on the server at `url` (the prefix `running_postgres` yields); returns its URL."""
    import psycopg

    host_url = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(host_url + "postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')  # a name the tests make: letters, digits, underscores
    return url + name
