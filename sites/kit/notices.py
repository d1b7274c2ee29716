"""The notice a page shows after a redirect (`?saved=1`), chosen from the flags in its query."""

from __future__ import annotations

from collections.abc import Mapping


class Notices:
    """A page's notices, each named by the query flag that asks for it, in the order they win."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)

    def pick(self, **flags: str) -> str | None:
        """The notice of the first flag (in declaration order) that is set, or None when none is.

        The page passes every one of its flags, so a flag it forgets is an error, not a notice never shown.
        """
        if flags.keys() != self.texts.keys():
            raise ValueError(f"notice flags {sorted(flags)} are not the page's {sorted(self.texts)}")
        return next((text for flag, text in self.texts.items() if flags[flag]), None)

    def named(self, flag: str) -> str | None:
        """The notice one query value names (`?done=sent`), or None for any other value."""
        return self.texts.get(flag)
