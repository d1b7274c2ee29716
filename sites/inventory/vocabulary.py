"""Hand-written words the inventory's filler is drawn from: product lines per category, suppliers, and the
look-alikes of the fixed products.

Kept by hand (not Faker) so that a seed's database never changes with a library's version. Every product line is
(name stem, variants, lowest and highest price in cents); a product's name is the stem and one variant.
"""

from __future__ import annotations

FILLER_CATEGORIES = (
    "Adhesives", "Decorating", "Electrical", "Fixings", "Garden", "Heating", "Lighting", "Plumbing", "Safety",
    "Storage", "Tools",
)
"""Categories the filler's products are in. Fasteners and Paint are not among them: tasks treat each of those
as a whole category of five fixed products (every Paint product, every Fasteners product)."""

ProductLine = tuple[str, tuple[str, ...], int, int]

PRODUCT_LINES: dict[str, tuple[ProductLine, ...]] = {
    "Adhesives": (
        ("Wood glue", ("250 ml", "500 ml", "1 L", "5 L"), 390, 2490),
        ("Construction adhesive", ("290 ml", "310 ml, solvent free", "400 ml"), 450, 1290),
        ("Silicone sealant", ("white 300 ml", "clear 300 ml", "grey 300 ml", "black 300 ml"), 490, 990),
        ("Epoxy putty", ("50 g", "114 g"), 590, 1190),
        ("Contact cement", ("250 ml", "750 ml"), 690, 1690),
        ("Superglue", ("3 g", "20 g gel"), 290, 890),
        ("Tile adhesive", ("5 kg", "20 kg"), 990, 3490),
    ),
    "Decorating": (
        ("Interior paint magnolia", ("2.5 L", "5 L", "10 L"), 1890, 5990),
        ("Wall filler", ("300 g", "600 g", "1 kg ready mixed"), 390, 1190),
        ("Sandpaper sheets", ("P80, pack of 10", "P120, pack of 10", "P180, pack of 10", "P240, pack of 10"),
         290, 690),
        ("Paint brush", ("25 mm", "38 mm", "50 mm", "75 mm", "set of 5"), 190, 1490),
        ("Dust sheet", ("3.6x2.7 m", "cotton twill 3.6x2.7 m"), 490, 1990),
        ("Wallpaper paste", ("5 rolls", "10 rolls"), 390, 790),
        ("Decorators caulk", ("white 310 ml", "brilliant white 380 ml"), 190, 490),
        ("Paint tray", ("23 cm", "30 cm", "liners, pack of 5"), 250, 890),
        ("White spirit", ("500 ml", "1 L", "2 L"), 290, 990),
        ("Wood stain", ("oak 750 ml", "walnut 750 ml", "teak 2.5 L"), 990, 2990),
    ),
    "Electrical": (
        ("Twin and earth cable", ("1.5 mm, 50 m", "2.5 mm, 50 m", "6 mm, 10 m"), 2490, 9990),
        ("Double socket", ("white", "brushed steel", "with USB"), 390, 2490),
        ("Fused spur", ("switched", "unswitched"), 490, 990),
        ("Cable clips", ("6 mm, pack of 100", "8 mm, pack of 100", "10 mm, pack of 100"), 190, 490),
        ("Consumer unit", ("10 way", "16 way"), 6990, 14990),
        ("Circuit breaker", ("6 A", "16 A", "32 A"), 490, 1290),
        ("Electrical tape", ("black 19 mm", "red 19 mm", "blue 19 mm"), 99, 290),
        ("Lever connectors", ("3 way, pack of 50", "5 way, pack of 25"), 890, 1790),
        ("Voltage tester", ("two pole", "non contact"), 890, 3990),
        ("Plug", ("13 A", "13 A, rubber"), 150, 490),
    ),
    "Fixings": (
        ("Coach screws", ("M8x60, pack of 10", "M10x80, pack of 10", "M10x100, pack of 10"), 390, 990),
        ("Chipboard screws", ("4x30 mm, box of 200", "4x50 mm, box of 200", "5x70 mm, box of 100"), 490, 1290),
        ("Frame fixings", ("8x100 mm, pack of 10", "10x120 mm, pack of 10"), 490, 1190),
        ("Nails round head", ("50 mm, 1 kg", "75 mm, 1 kg", "100 mm, 1 kg"), 390, 790),
        ("Threaded rod", ("M8x1 m", "M10x1 m", "M12x1 m"), 190, 690),
        ("Nylon nuts", ("M6, pack of 50", "M8, pack of 50", "M10, pack of 25"), 290, 690),
        ("Cavity anchors", ("M5, pack of 10", "M6, pack of 10"), 490, 990),
        ("Concrete screws", ("6x60 mm, pack of 25", "7.5x100 mm, pack of 10"), 690, 1490),
    ),
    "Garden": (
        ("Garden hose", ("15 m", "30 m", "50 m"), 1490, 4990),
        ("Hose connector", ("12.5 mm", "19 mm", "with stop"), 190, 690),
        ("Pruning shears", ("bypass", "anvil", "ratchet"), 990, 2990),
        ("Compost", ("40 L", "70 L"), 490, 990),
        ("Garden twine", ("jute 100 m", "green 250 m"), 190, 590),
        ("Plant pots", ("13 cm, pack of 10", "21 cm, pack of 5"), 290, 890),
        ("Lawn seed", ("500 g", "1 kg", "shade, 1 kg"), 690, 1990),
        ("Watering can", ("5 L", "10 L"), 490, 1490),
    ),
    "Heating": (
        ("Thermostatic radiator valve", ("15 mm", "10 mm"), 1290, 2990),
        ("Radiator bleed key", ("single", "pack of 2"), 99, 290),
        ("Pipe insulation", ("15 mm x 1 m", "22 mm x 1 m"), 99, 290),
        ("Radiator", ("single 600x1000", "double 600x1200", "double 600x800"), 5990, 14990),
        ("Inhibitor", ("500 ml", "1 L"), 990, 1990),
        ("Room thermostat", ("digital", "wireless"), 2990, 8990),
    ),
    "Lighting": (
        ("LED batten", ("600 mm", "1200 mm", "1500 mm"), 990, 2990),
        ("Downlight", ("fire rated, white", "fire rated, chrome", "tiltable"), 690, 1990),
        ("Outdoor wall light", ("black", "stainless"), 1990, 4990),
        ("LED strip", ("2 m", "5 m"), 1290, 3490),
        ("Floodlight", ("20 W", "30 W with sensor", "50 W"), 1490, 4490),
        ("Ceiling rose", ("white", "brass"), 190, 990),
    ),
    "Plumbing": (
        ("Copper pipe", ("15 mm x 2 m", "22 mm x 2 m", "15 mm x 3 m"), 690, 2490),
        ("Push fit tee", ("15 mm", "22 mm"), 190, 690),
        ("Solder ring elbow", ("15 mm", "22 mm"), 99, 390),
        ("Waste trap", ("32 mm", "40 mm", "bottle, 32 mm"), 290, 990),
        ("Isolating valve", ("15 mm", "22 mm"), 190, 690),
        ("Flexible tap connector", ("300 mm", "500 mm"), 390, 890),
        ("Toilet fill valve", ("side entry", "bottom entry"), 690, 1490),
        ("Sink plug", ("chrome", "black"), 99, 390),
    ),
    "Safety": (
        ("Safety glasses", ("clear", "tinted", "over specs"), 290, 990),
        ("Work gloves", ("size 9", "size 10", "cut resistant, size 10"), 290, 1290),
        ("Ear defenders", ("SNR 27", "SNR 32"), 690, 1990),
        ("Dust masks", ("FFP2, pack of 5", "FFP3, pack of 3"), 490, 1290),
        ("Hi-vis vest", ("size L", "size XL"), 290, 690),
        ("First aid kit", ("small", "workplace"), 990, 3490),
    ),
    "Storage": (
        ("Storage box", ("24 L", "45 L", "64 L"), 490, 1690),
        ("Shelving unit", ("5 tier", "4 tier, galvanised"), 2990, 7990),
        ("Tool box", ("16 in", "19 in", "22 in"), 990, 2990),
        ("Wall hooks", ("pack of 4", "heavy duty, pack of 2"), 290, 890),
        ("Parts organiser", ("18 drawer", "39 drawer"), 1490, 3490),
    ),
    "Tools": (
        ("Screwdriver set", ("6 piece", "12 piece", "insulated, 7 piece"), 890, 3490),
        ("Hacksaw", ("300 mm", "junior 150 mm"), 490, 1490),
        ("Adjustable wrench", ("150 mm", "250 mm"), 690, 1990),
        ("Pliers", ("combination 180 mm", "long nose 160 mm", "water pump 250 mm"), 590, 1790),
        ("Chisel", ("12 mm", "19 mm", "set of 4"), 490, 2490),
        ("Stud finder", ("basic", "multi scanner"), 1490, 3990),
        ("Hand saw", ("500 mm", "550 mm"), 990, 2290),
        ("Drill bits", ("HSS, set of 13", "masonry, set of 5", "wood, set of 8"), 590, 2490),
        ("Mallet", ("rubber 16 oz", "rubber 32 oz"), 490, 1290),
        ("Caulking gun", ("standard", "heavy duty"), 390, 1290),
    ),
}

LOOK_ALIKES: tuple[tuple[str, str, int], ...] = (
    ("Wood screws 4x40 mm, box of 100", "Fixings", 1),
    ("Drywall screws 3.5x25 mm, box of 500", "Fixings", 2),
    ("Hex bolts M8x50, pack of 25", "Fixings", 3),
    ("Wall plugs 8 mm, pack of 100", "Fixings", 4),
    ("Washers M6, pack of 100", "Fixings", 5),
    ("Claw hammer 20 oz", "Tools", 6),
    ("Cordless drill 18 V, body only", "Tools", 7),
    ("Utility knife blades, pack of 10", "Tools", 8),
    ("Spirit level 120 cm", "Tools", 9),
    ("Tape measure 8 m", "Tools", 10),
    ("Interior paint white 5 L", "Decorating", 11),
    ("Exterior paint gray 5 L", "Decorating", 12),
    ("Primer 1 L", "Decorating", 13),
    ("Paint roller 18 cm", "Decorating", 14),
    ("Masking tape 25 mm", "Decorating", 15),
    ("Extension cord 15 m", "Electrical", 16),
    ("LED bulb E14 9 W", "Lighting", 17),
    ("Light switch, double", "Electrical", 18),
    ("Cable ties 300 mm, pack of 100", "Electrical", 19),
    ("Junction box IP65", "Electrical", 20),
    ("PTFE tape 10 m", "Plumbing", 21),
    ("Compression elbow 22 mm", "Plumbing", 22),
    ("Basin tap, chrome", "Plumbing", 23),
    ("Radiator valve 15 mm, angled", "Heating", 24),
)
"""(name, category, the fixed product id it resembles): a name that differs from a fixed product's by a letter, a
number or a suffix (SKU-1023's discontinued "Basin tap, chrome" has an active namesake). None is in Fasteners or
Paint, so each stands beside the fixed product without joining the categories tasks treat as whole."""

SUPPLIERS: dict[str, tuple[str, ...]] = {
    "Adhesives": ("Bondex Adhesives", "Colourhouse Paints"),
    "Decorating": ("Colourhouse Paints", "Brushworks Decor"),
    "Electrical": ("Brightline Electrical", "Voltara Wholesale"),
    "Fixings": ("Northbolt Fasteners", "Fixright Trade"),
    "Garden": ("Greenleaf Garden Supply",),
    "Heating": ("Warmhaus Heating", "Aquaflow Plumbing"),
    "Lighting": ("Brightline Electrical", "Lumen & Co"),
    "Plumbing": ("Aquaflow Plumbing", "Pipeline Merchants"),
    "Safety": ("Safeguard Workwear",),
    "Storage": ("Stackwell Storage", "Toolworks Supply"),
    "Tools": ("Toolworks Supply", "Ironhand Tools"),
}
"""Who supplies each category: the fixed suppliers (Northbolt, Brightline, Colourhouse, Toolworks) have filler
purchase orders of their own beside the fixed ones."""

BRANDS: tuple[tuple[str, int], ...] = (
    ("", 100), ("Ardent", 120), ("Brookfield", 90), ("Corvex", 135), ("Dunmore", 80), ("Everline", 110),
    ("Hartwell", 125), ("Kestrel", 95), ("Marlow", 105),
)
"""(brand, price in percent of the line's price): an empty brand is the store's own unbranded line."""

REORDER_POINTS = (0, 2, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)
