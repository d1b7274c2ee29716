"""The errors of the service layer: each says what is wrong in words for a person, and which kind it is, so that
the CLI picks its exit code and the server its HTTP status from the kind alone."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["bad_input", "not_found", "conflict", "failed"]
"""bad_input: the request cannot be carried out as given (nothing was started); not_found: it names nothing that
exists; conflict: it collides with what exists or is running; failed: it was carried out and failed."""


class ServiceError(Exception):
    """A request the service refused or could not finish, with what a person should read."""

    def __init__(self, message: str, kind: ErrorKind = "bad_input") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 1 for a run that failed, 2 for a refused request (typer's usage errors are 2)."""
        return 1 if self.kind == "failed" else 2

    @property
    def http_status(self) -> int:
        """The server's status: never a 5xx, which would say the server itself failed (a run that failed is the
        run's state, 409)."""
        return {"bad_input": 422, "not_found": 404, "conflict": 409, "failed": 409}[self.kind]
