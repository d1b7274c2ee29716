"""Operation replay against a fresh tenant, and the receipts it produces."""

from replays.receipt import RECEIPT_FORMAT, Receipt
from replays.replay import RecordedEpisode, prepare_replay, replay_episode

__all__ = [
    "RECEIPT_FORMAT",
    "Receipt",
    "RecordedEpisode",
    "prepare_replay",
    "replay_episode",
]
