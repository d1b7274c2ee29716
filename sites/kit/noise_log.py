"""What a noisy episode served: each page in order, whether its kind was drawn for it and whether it fired
(`noise.json`, the noise study's evidence), and the session that keeps it while the episode runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.core.formats import Versioned
from sites.kit.noise import NoiseArm, NoiseKind, drawn

NOISE_LOG_FORMAT: Final = "computerops.noise/1"


class NoisePage(BaseModel):
    """One page (a document GET) of a noisy episode, in the order served."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ordinal: int = Field(ge=1)
    action: int | None
    """The action that asked for it (its action header; 0 the start page; None: none said)."""
    path: str
    query: str = ""
    drawn: bool
    """The kind was drawn for this page (`sites.kit.noise.drawn`)."""
    fired: bool
    """The kind changed what the page showed (drawn, and the page had what it acts on)."""
    shows: list[str] = Field(default_factory=list)
    """The text on the page that shows the noise, where it fired."""


class NoiseLog(Versioned):
    """`noise.json`: an episode's noise arm and every page it served."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.noise/1"] = NOISE_LOG_FORMAT
    arm: NoiseArm
    run_seed: int
    task_id: str
    repetition: int
    pages: list[NoisePage] = Field(default_factory=list)


@dataclass
class NoiseSession:
    """One noisy episode's draws and the pages served so far."""

    kind: NoiseKind
    run_seed: int
    task_id: str
    repetition: int
    pages: list[NoisePage] = field(default_factory=list)

    def drawn(self, ordinal: int) -> bool:
        return drawn(self.kind, self.run_seed, self.task_id, self.repetition, ordinal)

    def log(self) -> NoiseLog:
        return NoiseLog(arm=self.kind, run_seed=self.run_seed, task_id=self.task_id, repetition=self.repetition,
                        pages=list(self.pages))
