"""`computerops replay DIR`: every episode of a run replayed from its saved evidence."""

from __future__ import annotations

from computerops.runs.bundle import BundleError, RunDirectory
from computerops.runs.instances import changed_field
from replays import Receipt, replay_episode
from sites.kit.scratch import ScratchDirectory
from sites.registry import tenant_registry
from tasks import load_catalog


async def replay_run(bundle: RunDirectory) -> list[Receipt]:
    """One receipt per admitted episode, against the task files as they are now.

    Integrity problems (an evidence file whose bytes changed since the run) are named first in
    the receipt; a task file that changed since the run also fails the receipt.
    """
    catalog = load_catalog()
    receipts = []
    with ScratchDirectory("replay") as root:
        registry = tenant_registry(root)
        try:
            for record in bundle.records():
                task = catalog.get(record.task_id)
                if task is None:
                    raise BundleError(f"episode {record.episode_id}: task {record.task_id} is not in the catalog")
                problems = bundle.integrity_problems(record)
                if task.sha256 != record.task_sha256 and (field := changed_field(bundle.root, task)):
                    problems.append(f"task {task.id}: the regenerated instance differs in {field}")
                episode = bundle.load_episode(record)
                receipts.append(await replay_episode(task, episode, registry, evidence_problems=problems))
        finally:
            registry.close()
    return receipts
