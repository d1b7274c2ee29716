"""The HR desk: employees with their leave balances, leave requests and expense claims, decided by one HR officer
under the HR policy (approval limits by grade, receipts, leave balances)."""

from sites.hrdesk.governed import GOVERNED
from sites.hrdesk.models import METADATA
from sites.hrdesk.routes import build_router
from sites.hrdesk.seed import seed_hrdesk
from sites.kit.site import SiteDefinition

HRDESK = SiteDefinition(
    name="hrdesk",
    title="HR desk",
    router=build_router,
    metadata=METADATA,
    seed=seed_hrdesk,
    start_path="/hrdesk/",
    fault_support=frozenset({"partial_success"}),
    documents=frozenset({"expense-policy", "leave-rules"}),
    governed=GOVERNED,
)

__all__ = ["HRDESK"]
