"""What `computerops server` is started with, and the folders it keeps beside the runs."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

TOKEN_VARIABLE = "COMPUTEROPS_SERVER_TOKEN"
"""The environment variable `computerops server` reads its token from."""
ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

STATE = ".server"
"""The server's own folder inside the runs folder (hidden: never listed as a run): subsets/, locks/, jobs/ and the
default index database."""


class ServerSettings(BaseModel):
    """The server's settings: where runs live, the index database, and the token off loopback."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: Path
    host: str = "127.0.0.1"
    port: int = 8700
    database: str | None = None
    """A SQLAlchemy URL (sqlite:///..., postgresql+psycopg://...); None: SQLite in the state folder."""
    token: str | None = None
    """Required of every request when set: `Authorization: Bearer TOKEN` for the API, a login cookie for pages."""
    api_key_envs: tuple[str, ...] = ()
    """The environment variables a launch may name as its endpoints' API key (`computerops server --api-key-env NAME`,
    repeated): the operator's choice, never a client's. A launch naming any other variable is refused; the server's
    own token variable can never be one (the server would send its secret to whatever base URL a client names)."""
    ray_address: str | None = None
    """The Ray cluster launches with the `ray` executor join (`computerops server --ray-address`); None: each such
    run starts a local Ray instance in its worker process. Never a request's to choose: a run's workers receive its
    endpoint's API key."""

    @field_validator("api_key_envs")
    @classmethod
    def _not_the_servers_token(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not ENVIRONMENT_NAME.fullmatch(name):
                raise ValueError(f"--api-key-env {name!r} is not an environment variable's name")
            if name == TOKEN_VARIABLE:
                raise ValueError(f"--api-key-env {name}: the server's own token is never sent to an endpoint")
        return names

    @property
    def state(self) -> Path:
        return self.runs / STATE

    @property
    def subsets(self) -> Path:
        return self.state / "subsets"

    @property
    def locks(self) -> Path:
        return self.state / "locks"

    @property
    def jobs(self) -> Path:
        return self.state / "jobs"

    @property
    def database_url(self) -> str:
        """The index's SQLAlchemy URL: `postgresql://` means PostgreSQL through psycopg 3 (the driver the extra
        `computerops[postgres]` installs), as SQLAlchemy would otherwise look for psycopg2."""
        if self.database is None:
            return f"sqlite:///{(self.state / 'index.sqlite').resolve()}"
        for plain in ("postgresql://", "postgres://"):
            if self.database.startswith(plain):
                return "postgresql+psycopg://" + self.database.removeprefix(plain)
        return self.database

    def create_folders(self) -> None:
        for folder in (self.runs, self.subsets, self.locks, self.jobs):
            folder.mkdir(parents=True, exist_ok=True)


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
