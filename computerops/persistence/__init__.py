"""Long-running episodes: durable checkpoints with four ledgers, resumes in new processes, and the persistence arms
(docs/long-running.md)."""
