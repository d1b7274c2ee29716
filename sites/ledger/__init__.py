"""The ledger site: a dispatch console with a response queue of events, exactly-once deliveries and checkpoints."""

from sites.kit.site import SiteDefinition
from sites.ledger.governed import GOVERNED, UNGOVERNED_QUEUES
from sites.ledger.ledgers import LEDGERS
from sites.ledger.models import METADATA
from sites.ledger.routes import build_router
from sites.ledger.seed import seed_ledger

LEDGER = SiteDefinition(
    name="ledger",
    title="Ledger",
    router=build_router,
    metadata=METADATA,
    seed=seed_ledger,
    start_path="/ledger/",
    fault_support=frozenset({"duplicate_delivery", "out_of_order", "partial_success"}),
    governed=GOVERNED,
    ungoverned_queues=UNGOVERNED_QUEUES,
    ledgers=LEDGERS,
)

__all__ = ["LEDGER"]
