"""What annotate.js found of a page's state that the model must know before it acts, read from the annotated root:
a modal dialog open over the page (or in a frame), boxes fixed over the window that lie over controls, a list that
loads more as its end scrolls into view. Each is a header notice of the observation (adapter/render.py)."""

from __future__ import annotations

import json

from lxml import etree
from pydantic import BaseModel, ConfigDict, Field

from adapter.lines import flat

NAME_CHARS = 60
"""Characters of a box's name a notice shows (annotate.js BOX_NAME cuts it so already)."""


class Cover(BaseModel):
    """A box fixed (or stuck) over the window with offered controls under it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    covered: int = Field(ge=0)
    """Controls under it that no scroll of the window clears (their lines say `covered`)."""
    clear: int = Field(ge=0)
    """Controls under it that the driver scrolls clear of it before it clicks them."""


class PageState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    modal: str | None = None
    """The name of the open modal dialog; None when none is open."""
    modal_unseen: bool = False
    """The open modal dialog does not show (CSS hid it without closing it): the page behind it is inert all the same."""
    frame_modals: list[str] = Field(default_factory=list)
    """The names of the modal dialogs open in frames: each leaves its frame's page out, not the page around it."""
    covers: list[Cover] = Field(default_factory=list)
    loads_more: bool = False
    """A list of the page loads more as its end scrolls into view."""

    def notices(self) -> list[str]:
        """The header notices, in the order the model needs them: the dialog it must answer first, the boxes over
        controls, then the list that loads more."""
        said: list[str] = []
        if self.modal is not None and self.modal_unseen:
            said.append(f"A modal dialog ('{self.modal}') is open but hidden: the page behind it is inert, and nothing "
                        "there can be used until it is closed.")
        elif self.modal is not None:
            said.append(f"A modal dialog ('{self.modal}') is open: only its controls are offered; the page behind it "
                        "cannot be used until it is closed.")
        for name in self.frame_modals:
            said.append(f"A modal dialog ('{name}') is open in a frame: only its controls are offered there; the rest "
                        "of that frame cannot be used until it is closed.")
        for cover in self.covers:
            if cover.covered:
                more = f"; others under it ({cover.clear}) are scrolled clear of it when used" if cover.clear else ""
                said.append(f"'{cover.name}' is fixed over the window and covers {_controls(cover.covered)} marked "
                            f"covered: close it to use them{more}.")
            else:
                said.append(f"'{cover.name}' is fixed over part of the window: a control under it ({cover.clear} "
                            "now) is scrolled clear of it when used.")
        if self.loads_more:
            said.append("More of a list loads as its end is scrolled into view: use more at the page's last part to "
                        "scroll there and load it.")
        return said


def _controls(count: int) -> str:
    return f"{count} control" + ("" if count == 1 else "s")


def _name(text: object) -> str:
    name = flat(str(text)).strip()
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def page_state(root: etree._Element) -> PageState:
    """The state annotate.js recorded on the annotated page's root (`data-co-modal`, `data-co-modal-unseen`,
    `data-co-frame-modals`, `data-co-covers`, `data-co-loads-more`); a record that does not read is left out
    (annotate.js writes it, never the page)."""
    modal = root.get("data-co-modal")
    covers: list[Cover] = []
    try:
        listed = json.loads(root.get("data-co-covers") or "[]")
    except json.JSONDecodeError:
        listed = []
    try:
        framed = json.loads(root.get("data-co-frame-modals") or "[]")
    except json.JSONDecodeError:
        framed = []
    frame_modals = [_name(n) for n in framed if isinstance(n, str)] if isinstance(framed, list) else []
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, list) and len(entry) == 3 and all(isinstance(n, int) and n >= 0 for n in entry[1:]):
            covers.append(Cover(name=_name(entry[0]), covered=entry[1], clear=entry[2]))
    return PageState(modal=None if modal is None else _name(modal), covers=covers, frame_modals=frame_modals,
                     modal_unseen=modal is not None and root.get("data-co-modal-unseen") is not None,
                     loads_more=root.get("data-co-loads-more") is not None)
