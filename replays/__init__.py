"""Operation replay against a fresh tenant, and the receipts it produces."""

from replays.hashing import canonical_json, canonical_sha256, file_sha256
from replays.receipt import RECEIPT_FORMAT, Receipt
from replays.replay import RecordedEpisode, replay_episode

__all__ = [
    "RECEIPT_FORMAT",
    "Receipt",
    "RecordedEpisode",
    "canonical_json",
    "canonical_sha256",
    "file_sha256",
    "replay_episode",
]
