"""A run's defaults, defined once: the CLI's options, `Bounds` and the renderer all take them from here."""

from __future__ import annotations

ACTION_BUDGET = 32
"""Model replies an episode may have, rejected ones and the final done included."""
MAX_RESPONSE_TOKENS = 180
CONTEXT_TOKENS = 8192
TEMPERATURE = 0.0
SEED = 42
"""The sampling seed requested of the server (whether it honours it is not verified)."""
WALL_CLOCK_S = 600.0
REQUEST_TIMEOUT_S = 120.0
OBSERVATION_CHARS = 6000
"""The observation's size bound, in characters (adapter/render.py pages longer pages)."""
