"""A toy site built only with the kit, file by file as the site checklist of docs/extending.md says (`models.py`,
`seed.py`, `pages.py`, `routes.py`, `templates/`, this definition, one task under `tasks/`).

It is not one of the product's sites: `sites/registry.py` does not list it. Tests register it for a while
(`sites.registry.registered`), and then it gets what every registered site gets with no test of its own:
tests/test_site_invariants.py runs every invariant on it, and `tasks check` proves its task
(tests/test_toy_site.py).
"""

from pathlib import Path

from sites.kit.site import SiteDefinition
from toy_site.models import METADATA
from toy_site.routes import build_router
from toy_site.seed import seed_toy

TOY = SiteDefinition(
    name="toy",
    title="Toy shelf",
    router=build_router,
    metadata=METADATA,
    seed=seed_toy,
    start_path="/toy/",
)
TASKS = Path(__file__).parent / "tasks"
"""The toy site's task files (for a site of the product: `tasks/catalog/<site>/`)."""

__all__ = ["TASKS", "TOY"]
