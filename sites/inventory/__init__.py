"""The inventory site: products, stock adjustments with a reason, purchase orders and bulk edits."""

from sites.inventory.governed import GOVERNED
from sites.inventory.models import METADATA
from sites.inventory.routes import build_router
from sites.inventory.seed import seed_inventory
from sites.kit.site import SiteDefinition

INVENTORY = SiteDefinition(
    name="inventory",
    title="Inventory",
    router=build_router,
    metadata=METADATA,
    seed=seed_inventory,
    start_path="/inventory/",
    fault_support=frozenset({"partial_success"}),
    governed=GOVERNED,
)

__all__ = ["INVENTORY"]
