"""Seed data of the inventory: fixed records that tasks rely on, identical for every seed, and around them the
seed's filler (`sites.inventory.filler`): hundreds of products, purchase orders and stock adjustments.

Ids are fixed: product id N is SKU-(1000+N) (SKU-1001 … SKU-1024), purchase orders PO-5001 …
PO-5005 have ids 1 … 5. Which rows tasks use:

- below their reorder point (stock < reorder point), active: SKU-1003, SKU-1008, SKU-1013,
  SKU-1017, SKU-1020; SKU-1005 sits exactly at it; SKU-1023 is below but discontinued.
- open purchase orders: PO-5001 (SKU-1017, SKU-1020), PO-5002 (SKU-1003, SKU-1002),
  PO-5003 (SKU-1013, SKU-1011); PO-5004 is received, PO-5005 cancelled.

The filler takes the ids after the fixed ones (products SKU-1025 on, purchase orders PO-4001 … with ids from 6),
and never refers to a fixed product, so the fixed rows above mean for every seed what they say here.
"""

from __future__ import annotations

import random

from sqlalchemy import insert
from sqlmodel import Session

from sites.inventory.filler import draw_filler
from sites.inventory.models import Product, PurchaseOrder, PurchaseOrderLine, StockAdjustment

# (name, category, price cents, stock, reorder point, status); SKU-1001 first.
PRODUCTS = [
    ("Wood screws 4x40 mm, box of 200", "Fasteners", 890, 120, 50, "active"),
    ("Drywall screws 3.5x35 mm, box of 500", "Fasteners", 1250, 45, 40, "active"),
    ("Hex bolts M8x60, pack of 25", "Fasteners", 640, 18, 20, "active"),
    ("Wall plugs 6 mm, pack of 100", "Fasteners", 420, 60, 30, "active"),
    ("Washers M8, pack of 100", "Fasteners", 310, 25, 25, "active"),
    ("Claw hammer 16 oz", "Tools", 1990, 14, 5, "active"),
    ("Cordless drill 18 V", "Tools", 8900, 6, 4, "active"),
    ("Utility knife", "Tools", 750, 3, 10, "active"),
    ("Spirit level 60 cm", "Tools", 1590, 9, 6, "active"),
    ("Tape measure 5 m", "Tools", 990, 8, 6, "active"),
    ("Interior paint white 10 L", "Paint", 5400, 22, 10, "active"),
    ("Exterior paint grey 5 L", "Paint", 3850, 11, 8, "active"),
    ("Primer 2.5 L", "Paint", 2100, 4, 6, "active"),
    ("Paint roller 25 cm", "Paint", 690, 40, 15, "active"),
    ("Masking tape 38 mm", "Paint", 360, 75, 30, "active"),
    ("Extension cord 10 m", "Electrical", 1650, 12, 5, "active"),
    ("LED bulb E27 9 W", "Electrical", 490, 0, 40, "active"),
    ("Light switch, single", "Electrical", 580, 33, 10, "active"),
    ("Cable ties 200 mm, pack of 100", "Electrical", 390, 52, 20, "active"),
    ("Junction box IP55", "Electrical", 720, 9, 12, "active"),
    ("PTFE tape 12 m", "Plumbing", 180, 90, 30, "active"),
    ("Compression elbow 15 mm", "Plumbing", 260, 12, 10, "active"),
    ("Basin tap, chrome", "Plumbing", 4500, 1, 2, "discontinued"),
    ("Radiator valve 15 mm", "Plumbing", 1120, 16, 8, "active"),
]
# (number, supplier, status, created at, received at, [(product id, quantity, received)])
PURCHASE_ORDERS = [
    ("PO-5001", "Brightline Electrical", "open", "2026-02-25 10:30", None, [(17, 60, 0), (20, 12, 0)]),
    ("PO-5002", "Northbolt Fasteners", "open", "2026-02-26 14:00", None, [(3, 40, 0), (2, 100, 0)]),
    ("PO-5003", "Colourhouse Paints", "open", "2026-02-27 09:15", None, [(13, 24, 0), (11, 10, 0)]),
    ("PO-5004", "Toolworks Supply", "received", "2026-02-16 11:00", "2026-02-20 15:10", [(6, 10, 10)]),
    ("PO-5005", "Northbolt Fasteners", "cancelled", "2026-02-12 08:45", None, [(1, 200, 0)]),
]
# (product id, quantity, reason, reference, stock after, created at)
ADJUSTMENTS = [
    (6, 10, "received", "PO-5004", 14, "2026-02-20 15:10"),
    (8, -2, "count correction", "", 3, "2026-02-23 17:40"),
    (11, -1, "damaged", "", 22, "2026-02-26 12:25"),
]


def seed_inventory(session: Session, rng: random.Random) -> None:
    """Fills a fresh inventory database with the fixed catalogue (the same for every seed) and the seed's filler
    (drawn only from `rng`)."""
    for index, (name, category, price, stock, reorder, status) in enumerate(PRODUCTS, 1):
        session.add(
            Product(
                id=index,
                sku=f"SKU-{1000 + index}",
                name=name,
                category=category,
                price_cents=price,
                stock=stock,
                reorder_point=reorder,
                status=status,
            )
        )
    session.flush()  # products exist before the lines and adjustments that refer to them
    line_id = 0
    for index, (number, supplier, status, created, received, lines) in enumerate(PURCHASE_ORDERS, 1):
        session.add(
            PurchaseOrder(
                id=index, number=number, supplier=supplier, status=status, created_at=created, received_at=received
            )
        )
        for product_id, quantity, received_quantity in lines:
            line_id += 1
            session.add(
                PurchaseOrderLine(
                    id=line_id,
                    purchase_order_id=index,
                    product_id=product_id,
                    quantity=quantity,
                    received_quantity=received_quantity,
                )
            )
    for index, (product_id, quantity, reason, reference, after, created) in enumerate(ADJUSTMENTS, 1):
        session.add(
            StockAdjustment(
                id=index,
                product_id=product_id,
                quantity=quantity,
                reason=reason,
                reference=reference,
                stock_after=after,
                created_at=created,
            )
        )
    first_ids = {"product": len(PRODUCTS) + 1, "purchase_order": len(PURCHASE_ORDERS) + 1,
                 "purchase_order_line": line_id + 1, "stock_adjustment": len(ADJUSTMENTS) + 1}
    filler = draw_filler(rng, fixed_prices={index: row[2] for index, row in enumerate(PRODUCTS, 1)},
                         first_ids=first_ids)
    session.flush()  # the fixed rows first, then the filler in bulk (one statement per table: fast to build)
    for model, rows in ((Product, filler.products), (PurchaseOrder, filler.orders),
                        (PurchaseOrderLine, filler.lines), (StockAdjustment, filler.adjustments)):
        session.execute(insert(model), rows)
