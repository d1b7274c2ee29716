"""Serving faults at the model endpoint: the fault layer, the serving arms, the record (docs/long-running.md)."""
