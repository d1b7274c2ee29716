"""Seed data of the HR desk: fixed records that tasks rely on, then seed-dependent filler.

The fixed records are identical for every seed; filler is drawn from the template generator and numbered above
them (employees from E-1021, leave requests from L-3021, expense claims from X-5031), so seeds differ without ever
touching a fixed record. Filler: 107 employees (120 in all), 220 leave requests and 520 expense claims.

Fixed employees (id, number): the seven department heads E-1001..E-1007 (grade G5, no manager: Amara Okafor of
Finance, Jonas Weber of Engineering, Claire Dubois of Marketing, Kenji Watanabe of Operations, Fatima Haddad of
People, Marco Bianchi of Sales, Ingrid Larsen of Support), then

- 8 E-1008 Lucia Moreno, Engineering, G3 (annual 14, sick 10), and her look-alike 9 E-1009 Lucia Morena, Sales, G2
  (annual 9, sick 10);
- 10 E-1010 Tomasz Nowak, Operations, G2 (annual 3, sick 8);
- 11 E-1011 Priya Raman, Sales, G4 (annual 20, sick 10);
- 12 E-1012 Samuel Osei, Support, G1 (annual 11, sick 10);
- 13 E-1013 Hannah Becker, Marketing, G3 (annual 6, sick 10).

Fixed leave requests: L-3001 Lucia Moreno, annual, 16-20 March, 5 days, submitted; L-3002 Tomasz Nowak, annual,
23 March-3 April, 10 days, submitted (more than his 3 days left); L-3003 Lucia Morena, annual, 16-18 March, 3 days,
submitted; L-3004 Hannah Becker, sick, 2 days, approved; L-3005 Priya Raman, annual, 6-10 April, 5 days,
submitted; L-3006 Samuel Osei, unpaid, 3 days, submitted.

Fixed expense claims: X-5001 Lucia Moreno, travel, 412.80 EUR, receipt RC-40711, and its look-alike X-5002 Lucia
Morena, travel, 412.80 EUR, receipt RC-40717 (one digit apart), both submitted; X-5003 Priya Raman, lodging,
2240.00 USD (her G4 limit is 2500.00), submitted; X-5004 Samuel Osei, equipment, 780.00 GBP (above his G1 limit of
500.00), submitted; X-5005 and X-5006 Tomasz Nowak, meals, 64.50 EUR each, the same dinner on the same day, no
receipt, submitted; X-5007 (software, 289.00 EUR, RC-41002), X-5008 (training, 350.00 EUR, RC-41003) and X-5009
(travel, 38.40 EUR, no receipt) Hannah Becker, submitted, and X-5010 Hannah Becker, travel, 120.00 EUR, approved;
X-5011 Jonas Weber, software, 1950.00 USD, RC-41110, submitted.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from sqlmodel import Session

from sites.hrdesk.models import (
    DEPARTMENTS,
    DESK_USER,
    EXPENSE_CATEGORIES,
    Employee,
    ExpenseClaim,
    LeaveBalance,
    LeaveRequest,
)

# (id, name, department, grade, title, manager id, annual days, sick days)
EMPLOYEES = [
    (1, "Amara Okafor", "Finance", "G5", "Head of Finance", None, 22, 10),
    (2, "Jonas Weber", "Engineering", "G5", "Head of Engineering", None, 18, 10),
    (3, "Claire Dubois", "Marketing", "G5", "Head of Marketing", None, 25, 10),
    (4, "Kenji Watanabe", "Operations", "G5", "Head of Operations", None, 16, 10),
    (5, "Fatima Haddad", "People", "G5", "Head of People", None, 21, 10),
    (6, "Marco Bianchi", "Sales", "G5", "Head of Sales", None, 19, 10),
    (7, "Ingrid Larsen", "Support", "G5", "Head of Support", None, 24, 10),
    (8, "Lucia Moreno", "Engineering", "G3", "Software engineer", 2, 14, 10),
    (9, "Lucia Morena", "Sales", "G2", "Account executive", 6, 9, 10),
    (10, "Tomasz Nowak", "Operations", "G2", "Warehouse coordinator", 4, 3, 8),
    (11, "Priya Raman", "Sales", "G4", "Key account manager", 6, 20, 10),
    (12, "Samuel Osei", "Support", "G1", "Support agent", 7, 11, 10),
    (13, "Hannah Becker", "Marketing", "G3", "Marketing manager", 3, 6, 10),
]
HEADS = {department: employee_id for employee_id, _, department, _, _, manager, _, _ in EMPLOYEES
         if manager is None}

# (number, employee id, type, start, end, days, reason, status, submitted at)
LEAVE = [
    ("L-3001", 8, "annual", "2026-03-16", "2026-03-20", 5, "Family visit in Valencia", "submitted",
     "2026-02-26 10:12"),
    ("L-3002", 10, "annual", "2026-03-23", "2026-04-03", 10, "Trip to Kraków", "submitted", "2026-02-27 08:40"),
    ("L-3003", 9, "annual", "2026-03-16", "2026-03-18", 3, "Moving house", "submitted", "2026-02-26 15:03"),
    ("L-3004", 13, "sick", "2026-02-16", "2026-02-17", 2, "Flu", "approved", "2026-02-16 08:05"),
    ("L-3005", 11, "annual", "2026-04-06", "2026-04-10", 5, "Spring holiday", "submitted", "2026-02-28 11:20"),
    ("L-3006", 12, "unpaid", "2026-03-30", "2026-04-01", 3, "Certification exam", "submitted", "2026-02-28 16:45"),
]

# (number, employee id, category, description, cents, currency, incurred on, receipt, status)
CLAIMS = [
    ("X-5001", 8, "travel", "Train to client workshop, Lyon", 41280, "EUR", "2026-02-19", "RC-40711", "submitted"),
    ("X-5002", 9, "travel", "Train to trade fair, Lyon", 41280, "EUR", "2026-02-19", "RC-40717", "submitted"),
    ("X-5003", 11, "lodging", "Hotel, Dublin sales summit (4 nights)", 224000, "USD", "2026-02-23", "RC-40852",
     "submitted"),
    ("X-5004", 12, "equipment", "Noise-cancelling headset and monitor", 78000, "GBP", "2026-02-24", "RC-40903",
     "submitted"),
    ("X-5005", 10, "meals", "Team dinner after stocktake", 6450, "EUR", "2026-02-25", "", "submitted"),
    ("X-5006", 10, "meals", "Team dinner after stocktake", 6450, "EUR", "2026-02-25", "", "submitted"),
    ("X-5007", 13, "software", "Design tool licence (annual)", 28900, "EUR", "2026-02-20", "RC-41002", "submitted"),
    ("X-5008", 13, "training", "Copywriting workshop", 35000, "EUR", "2026-02-21", "RC-41003", "submitted"),
    ("X-5009", 13, "travel", "Taxi to photo shoot", 3840, "EUR", "2026-02-22", "", "submitted"),
    ("X-5010", 13, "travel", "Train to agency briefing", 12000, "EUR", "2026-02-03", "RC-40412", "approved"),
    ("X-5011", 2, "software", "Code analysis licence (team)", 195000, "USD", "2026-02-26", "RC-41110", "submitted"),
]

FIRST_EMPLOYEE_ID, FIRST_LEAVE, FIRST_CLAIM = 21, 3021, 5031
FILLER_EMPLOYEES, FILLER_LEAVE, FILLER_CLAIMS = 107, 220, 520

FIRST_NAMES = (
    "Aaliyah", "Adrian", "Aiko", "Alice", "Amir", "Ana", "Anders", "Anika", "Ben", "Carla", "Chen", "Chiara",
    "Daniel", "Dario", "Elena", "Elif", "Emeka", "Emma", "Erik", "Fatou", "Felix", "Grace", "Hugo", "Ines",
    "Ivan", "Jakub", "Jana", "Julia", "Kai", "Karin", "Kofi", "Laura", "Leon", "Lina", "Luca", "Maja", "Malik",
    "Marta", "Mateo", "Mia", "Nadia", "Nina", "Noah", "Olga", "Omar", "Paula", "Pedro", "Rafael", "Rosa", "Sara",
    "Sofia", "Stefan", "Tariq", "Teresa", "Theo", "Vera", "Viktor", "Yara", "Yusuf", "Zoe",
)
LAST_NAMES = (
    "Andersen", "Bauer", "Berg", "Costa", "Dimitrov", "Esposito", "Fischer", "Garcia", "Hansen", "Ibrahim",
    "Jansen", "Kaya", "Kowalski", "Lambert", "Lindqvist", "Martin", "Meyer", "Mensah", "Novak", "Oliveira",
    "Petrov", "Quinn", "Rossi", "Santos", "Schmidt", "Silva", "Suzuki", "Tanaka", "Tran", "Ustinov", "Varga",
    "Wagner", "Walsh", "Yilmaz", "Zimmermann", "Horvat", "Kim", "Nowicki", "Park", "Sato",
)
TITLES = {
    "Engineering": ("Software engineer", "QA engineer", "Site reliability engineer", "Data engineer"),
    "Finance": ("Accountant", "Financial analyst", "Payroll specialist"),
    "Marketing": ("Content writer", "Designer", "Campaign manager"),
    "Operations": ("Warehouse coordinator", "Logistics planner", "Facilities officer"),
    "People": ("Recruiter", "HR officer", "Learning coordinator"),
    "Sales": ("Account executive", "Sales engineer", "Key account manager"),
    "Support": ("Support agent", "Support team lead", "Onboarding specialist"),
}
FILLER_GRADES = (("G1", 25), ("G2", 35), ("G3", 25), ("G4", 15))
LEAVE_STATUS_WEIGHTS = (("approved", 60), ("submitted", 20), ("rejected", 10), ("cancelled", 10))
LEAVE_TYPE_WEIGHTS = (("annual", 70), ("sick", 22), ("unpaid", 8))
LEAVE_REASONS = {
    "annual": ("Family holiday", "Wedding", "City break", "School holidays", "Visiting parents", "Hiking trip"),
    "sick": ("Flu", "Medical appointment", "Back pain", "Migraine"),
    "unpaid": ("Volunteering", "Personal matters", "Extended travel"),
}
CLAIM_STATUS_WEIGHTS = (("approved", 55), ("submitted", 25), ("rejected", 13), ("receipt_requested", 7))
CURRENCY_WEIGHTS = (("EUR", 60), ("GBP", 20), ("USD", 20))
# category: (descriptions, lowest cents, highest cents)
CLAIM_KINDS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "travel": (("Train ticket", "Flight to customer site", "Taxi from airport", "Rental car"), 1800, 64000),
    "meals": (("Client lunch", "Team dinner", "Working breakfast"), 1200, 24000),
    "lodging": (("Hotel, two nights", "Hotel, conference week", "Guest house"), 9000, 180000),
    "equipment": (("Laptop stand", "Headset", "Monitor", "Ergonomic chair"), 2500, 95000),
    "training": (("Online course", "Conference ticket", "Certification fee"), 4900, 150000),
    "software": (("Plugin licence", "Cloud storage plan", "Diagram tool subscription"), 900, 60000),
}
REJECTION_NOTES = ("Personal expense", "Duplicate of an earlier claim", "Not covered by the expense policy")
EPOCH_DAY = date(2026, 3, 2)


def _weighted(rng: random.Random, choices: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([value for value, _ in choices], weights=[weight for _, weight in choices])[0]


def _moment(day: date, rng: random.Random) -> str:
    return f"{day.isoformat()} {rng.randint(8, 17):02d}:{rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50)):02d}"


def _working_days_from(start: date, days: int) -> date:
    """The last day of `days` working days from `start` (a working day), weekends skipped."""
    end, left = start, days - 1
    while left:
        end += timedelta(days=1)
        if end.weekday() < 5:
            left -= 1
    return end


def _email(name: str, taken: set[str]) -> str:
    base = name.lower().replace(" ", ".")
    email, suffix = f"{base}@northwind-hr.example", 2
    while email in taken:
        email, suffix = f"{base}{suffix}@northwind-hr.example", suffix + 1
    taken.add(email)
    return email


def _seed_employees(session: Session, rng: random.Random) -> list[Employee]:
    """The fixed employees and the filler, each with an annual and a sick balance; returns the filler."""
    emails: set[str] = set()
    for employee_id, name, department, grade, title, manager, annual, sick in EMPLOYEES:
        session.add(Employee(id=employee_id, number=f"E-{1000 + employee_id}", name=name, email=_email(name, emails),
                             department=department, grade=grade, title=title, manager_id=manager))
        session.add(LeaveBalance(employee_id=employee_id, leave_type="annual", days=annual))
        session.add(LeaveBalance(employee_id=employee_id, leave_type="sick", days=sick))
    fixed_names = {name for _, name, *_ in EMPLOYEES}
    filler: list[Employee] = []
    for offset in range(FILLER_EMPLOYEES):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        while name in fixed_names:
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        department = rng.choice(DEPARTMENTS)
        employee_id = FIRST_EMPLOYEE_ID + offset
        employee = Employee(id=employee_id, number=f"E-{1000 + employee_id}", name=name, email=_email(name, emails),
                            department=department, grade=_weighted(rng, FILLER_GRADES),
                            title=rng.choice(TITLES[department]), manager_id=HEADS[department])
        session.add(employee)
        session.add(LeaveBalance(employee_id=employee_id, leave_type="annual", days=rng.randint(0, 25)))
        session.add(LeaveBalance(employee_id=employee_id, leave_type="sick", days=rng.randint(3, 10)))
        filler.append(employee)
    return filler


def _seed_leave(session: Session, rng: random.Random, employees: list[Employee]) -> None:
    for number, employee_id, leave_type, start, end, days, reason, status, submitted_at in LEAVE:
        decided = status != "submitted"
        session.add(LeaveRequest(number=number, employee_id=employee_id, leave_type=leave_type, start_date=start,
                                 end_date=end, days=days, reason=reason, status=status, submitted_at=submitted_at,
                                 decided_by=DESK_USER if decided else "",
                                 decided_at="2026-02-18 09:30" if decided else ""))
    for offset in range(FILLER_LEAVE):
        employee = rng.choice(employees)
        leave_type = _weighted(rng, LEAVE_TYPE_WEIGHTS)
        status = _weighted(rng, LEAVE_STATUS_WEIGHTS)
        first = EPOCH_DAY + timedelta(days=rng.randint(-60, 120))
        while first.weekday() >= 5:
            first += timedelta(days=1)
        days = rng.randint(1, 3) if leave_type == "sick" else rng.randint(1, 10)
        submitted = min(first, EPOCH_DAY) - timedelta(days=rng.randint(1, 20))
        decided = status in ("approved", "rejected")
        note = "Team already short that week" if status == "rejected" else ""
        session.add(LeaveRequest(
            number=f"L-{FIRST_LEAVE + offset}", employee_id=employee.id or 0, leave_type=leave_type,
            start_date=first.isoformat(), end_date=_working_days_from(first, days).isoformat(), days=days,
            reason=rng.choice(LEAVE_REASONS[leave_type]), status=status, submitted_at=_moment(submitted, rng),
            decided_by=rng.choice((DESK_USER, "Fatima Haddad")) if decided else "",
            decided_at=_moment(submitted + timedelta(days=1), rng) if decided else "", decision_note=note))


def _seed_claims(session: Session, rng: random.Random, employees: list[Employee]) -> None:
    for number, employee_id, category, description, cents, currency, incurred, receipt, status in CLAIMS:
        approved = status == "approved"
        session.add(ExpenseClaim(number=number, employee_id=employee_id, category=category, description=description,
                                 amount_cents=cents, currency=currency, incurred_on=incurred, receipt=receipt,
                                 status=status, submitted_at=f"{incurred} 18:00",
                                 approver=DESK_USER if approved else "",
                                 decided_at="2026-02-05 10:00" if approved else ""))
    receipts = rng.sample(range(42000, 99999), FILLER_CLAIMS)
    for offset in range(FILLER_CLAIMS):
        employee = rng.choice(employees)
        category = rng.choice(EXPENSE_CATEGORIES)
        descriptions, low, high = CLAIM_KINDS[category]
        status = _weighted(rng, CLAIM_STATUS_WEIGHTS)
        spent = EPOCH_DAY - timedelta(days=rng.randint(2, 90))
        submitted = spent + timedelta(days=rng.randint(0, 6))
        no_receipt = status == "receipt_requested" or (status == "submitted" and rng.random() < 0.15)
        decided = status in ("approved", "rejected", "receipt_requested")
        note = {"rejected": rng.choice(REJECTION_NOTES), "receipt_requested": "Please attach the receipt"}
        session.add(ExpenseClaim(
            number=f"X-{FIRST_CLAIM + offset}", employee_id=employee.id or 0, category=category,
            description=rng.choice(descriptions), amount_cents=rng.randint(low // 10, high // 10) * 10,
            currency=_weighted(rng, CURRENCY_WEIGHTS), incurred_on=spent.isoformat(),
            receipt="" if no_receipt else f"RC-{receipts[offset]}", status=status,
            submitted_at=_moment(min(submitted, EPOCH_DAY - timedelta(days=1)), rng),
            approver=rng.choice((DESK_USER, "Amara Okafor")) if decided else "",
            decided_at=_moment(min(submitted + timedelta(days=2), EPOCH_DAY - timedelta(days=1)), rng)
            if decided else "",
            note=note.get(status, "")))


def seed_hrdesk(session: Session, rng: random.Random) -> None:
    """Fills a fresh HR desk: the fixed records (module docstring), then filler drawn from `rng` only."""
    filler = _seed_employees(session, rng)
    session.flush()  # employees first, so the requests' and claims' foreign keys resolve in order
    # Filler requests and claims are the filler employees' only: a fixed employee's are the same for every seed.
    _seed_leave(session, rng, filler)
    _seed_claims(session, rng, filler)
