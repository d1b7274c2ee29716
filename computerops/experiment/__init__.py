"""Experiments: pre-registered, matched, counterbalanced designs, frozen before any model call, with verdicts
by frozen rule (docs/experiments.md)."""
