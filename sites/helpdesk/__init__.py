"""The helpdesk site: tickets, orders, refunds bound to approvals, goodwill credits, notifications,
follow-ups (unfinished work) and escalation to human queues."""

from sites.helpdesk.governed import GOVERNED
from sites.helpdesk.ledgers import LEDGERS
from sites.helpdesk.models import METADATA, REFUND_POLICY_VERSION
from sites.helpdesk.routes import build_router
from sites.helpdesk.seed import seed_helpdesk
from sites.kit.site import SiteDefinition

HELPDESK = SiteDefinition(
    name="helpdesk",
    title="Helpdesk",
    router=build_router,
    metadata=METADATA,
    seed=seed_helpdesk,
    start_path="/helpdesk/",
    generated_columns=frozenset({("notification", "message_id")}),
    documents=frozenset({"escalation-rules", "follow-up-rules"}),
    governed=GOVERNED,
    ledgers=LEDGERS,
)

__all__ = ["HELPDESK", "REFUND_POLICY_VERSION"]
