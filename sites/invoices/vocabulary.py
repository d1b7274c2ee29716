"""The invoices site's filler vocabulary: the vendors an accounts-payable clerk sees, and what each kind bills.

Hand-written (never Faker: its output changes between versions, and with it every seeded database). Look-alikes are
listed as vendors of their own: a name that differs by a letter (Kestral / Kestrel, Harbour / Harbor) or by a suffix
(Brightline Software Ltd), billing the same kind of things, so a list filtered by vendor or searched by name shows
near-neighbours a careless reader could take for the vendor a task names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """Something a vendor bills: unit price and quantity ranges (cents, whole units). `{month}` in the description
    is the month the invoice bills for (the one before it was issued)."""

    description: str
    low: int
    high: int
    most: int = 1
    fewest: int = 1


@dataclass(frozen=True)
class Vendor:
    """A vendor of the filler: its name, the currency it invoices in, what it bills, and how often it is drawn."""

    name: str
    currency: str
    kind: str
    weight: int = 3
    billing_day: int | None = None
    """The day of the month it invoices on (a utility's monthly bill), or None for any day."""
    scale: int = 1
    """Prices in its currency are the item's times this (kronor buy a tenth of what euros do)."""


BILLED: dict[str, tuple[Item, ...]] = {
    "office": (Item("Copy paper A4 (box)", 2200, 2600, 20), Item("Toner cartridge", 7900, 9500, 6),
               Item("Whiteboard markers", 280, 350, 40, 5), Item("Notebooks", 250, 300, 60, 10),
               Item("Desk organiser", 1200, 1800, 10, 2), Item("Delivery", 1500, 1500)),
    "furniture": (Item("Standing desk", 28000, 33000, 6), Item("Monitor arm", 4500, 5500, 8),
                  Item("Office chair", 18000, 26000, 10), Item("Filing cabinet", 15000, 21000, 4),
                  Item("Assembly (hours)", 4500, 6000, 8)),
    "software": (Item("Seat licence (annual)", 4500, 5200, 40, 5), Item("Support plan (months)", 1800, 2200, 12, 3),
                 Item("Onboarding workshop", 80000, 100000), Item("Additional storage (TB)", 900, 1200, 10)),
    "legal": (Item("Contract review (hours)", 19000, 23000, 12), Item("Filing fees", 5000, 9000),
              Item("Court attendance (days)", 120000, 160000, 2), Item("Trademark search", 35000, 45000)),
    "utilities": (Item("Electricity, {month}", 40000, 90000), Item("Standing charge", 2500, 3200),
                  Item("Water, {month}", 8000, 16000)),
    "consulting": (Item("Process audit", 300000, 450000), Item("Workshop (days)", 180000, 240000, 4),
                   Item("Travel", 20000, 45000)),
    "logistics": (Item("Pallet transport Leeds to York", 15000, 21000, 8), Item("Fuel surcharge", 5000, 9000),
                  Item("Express courier", 3200, 4000, 12), Item("Customs handling", 4500, 6000, 3),
                  Item("Warehouse storage, {month}", 120000, 200000)),
    "catering": (Item("Lunch platters", 1500, 6000, 20, 2), Item("Coffee and pastries", 800, 1500, 40, 5),
                 Item("Staff event catering", 90000, 250000)),
    "telecom": (Item("Mobile plans, {month}", 1500, 3000, 60, 10), Item("Broadband, {month}", 6000, 12000),
                Item("Handset", 45000, 90000, 5)),
    "cleaning": (Item("Office cleaning, {month}", 120000, 190000), Item("Window cleaning", 25000, 40000),
                 Item("Consumables", 500, 4000, 10)),
    "it": (Item("Service fee", 5000, 40000, 6), Item("Call-out charge", 4000, 12000, 3),
           Item("Laptop", 90000, 160000, 5), Item("Managed services, {month}", 150000, 300000)),
    "printing": (Item("Printed brochures (100)", 3000, 9000, 20), Item("Business cards (250)", 2500, 4000, 10),
                 Item("Roll-up banner", 8000, 15000, 4)),
    "travel": (Item("Flights", 15000, 90000, 6), Item("Hotel (nights)", 9000, 22000, 10),
               Item("Booking fee", 1500, 3000, 6)),
    "security": (Item("Guarding (hours)", 2200, 3200, 200, 20), Item("Alarm monitoring, {month}", 9000, 15000),
                 Item("Key holding", 4000, 6000)),
    "courier": (Item("Same-day courier", 1800, 4500, 20), Item("Next-day parcel", 900, 1600, 40)),
    "facilities": (Item("Maintenance visit", 15000, 35000, 3), Item("Parts", 500, 12000, 10),
                   Item("HVAC service", 60000, 120000)),
    "hosting": (Item("Rack space, {month}", 150000, 260000), Item("Bandwidth (TB)", 2000, 4500, 30),
                Item("Remote hands (hours)", 9000, 14000, 6)),
    "equipment": (Item("Calibration service", 80000, 150000), Item("Spare parts", 2000, 25000, 10)),
    "insurance": (Item("Premium instalment", 80000, 250000), Item("Policy fee", 5000, 10000)),
    "recruitment": (Item("Placement fee", 450000, 900000), Item("Job advertising", 25000, 60000, 2)),
    "marketing": (Item("Campaign management", 200000, 450000), Item("Media spend", 100000, 600000),
                  Item("Design (hours)", 7000, 11000, 20)),
    "parking": (Item("Parking permits, {month}", 9000, 14000, 12),),
}

VENDORS: tuple[Vendor, ...] = (
    # The fixed records' vendors bill again, in their own currencies (Kestrel Logistics never: a task counts its
    # invoices), each beside a look-alike.
    Vendor("Northwind Supplies", "EUR", "office", 6),
    Vendor("Northwind Supply Co.", "EUR", "office", 3),
    Vendor("Harbor Office Furniture", "EUR", "furniture", 3),
    Vendor("Harbour Office Furniture", "GBP", "furniture", 2),
    Vendor("Brightline Software", "GBP", "software", 3),
    Vendor("Brightline Software Ltd", "GBP", "software", 2),
    Vendor("Alder & Finch Legal", "EUR", "legal", 3),
    Vendor("Alder & Finch LLP", "GBP", "legal", 2),
    Vendor("Clearwater Utilities", "GBP", "utilities", 4, billing_day=18),
    Vendor("Clearwater Utility Services", "EUR", "utilities", 2),
    Vendor("Alpenrose Consulting AG", "CHF", "consulting", 2),
    Vendor("Kestral Logistics", "USD", "logistics", 3),
    Vendor("Kestrel Freight Brokers", "USD", "logistics", 2),
    # Everyone else a portal like this one pays.
    Vendor("Greenleaf Catering", "EUR", "catering", 4),
    Vendor("Orbit Telecom", "EUR", "telecom", 3, billing_day=1),
    Vendor("Orbital Telecom", "USD", "telecom", 2),
    Vendor("Pinecrest Cleaning", "GBP", "cleaning", 3, billing_day=28),
    Vendor("Summit IT Services", "USD", "it", 4),
    Vendor("Bluebay Print", "EUR", "printing", 3),
    Vendor("Bluebay Printing", "GBP", "printing", 2),
    Vendor("Meridian Travel", "EUR", "travel", 4),
    Vendor("Copperfield Security", "GBP", "security", 3),
    Vendor("Lakeside Couriers", "USD", "courier", 4),
    Vendor("Redwood Facilities", "USD", "facilities", 3),
    Vendor("Silverline Data Centres", "EUR", "hosting", 2, billing_day=1),
    Vendor("Matterhorn Precision AG", "CHF", "equipment", 1),
    Vendor("Fjord & Pine AB", "SEK", "furniture", 1, scale=10),
    Vendor("Granite Peak Insurance", "USD", "insurance", 2),
    Vendor("Oakridge Recruitment", "GBP", "recruitment", 2),
    Vendor("Sunfield Energy", "EUR", "utilities", 2, billing_day=5),
    Vendor("Vantage Marketing Group", "USD", "marketing", 2),
    Vendor("Willow & Birch Interiors", "GBP", "furniture", 2),
    Vendor("Cobalt Cloud Hosting", "USD", "hosting", 3),
    Vendor("Riverside Coffee Roasters", "EUR", "catering", 3),
    Vendor("Northgate Parking", "GBP", "parking", 2, billing_day=1),
)

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
