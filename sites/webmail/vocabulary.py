"""What the webmail's filler is drawn from: people's names, the companies they work for, and what they write.

Names and companies are chosen so that no filler contact has a fixed contact's name, and no filler company is a
fixed contact's company: a filler person may share a fixed contact's first name (a Carlos, a Lena) or a company's
stem (Northwind Freight), which is what makes the deciding record one to tell apart. Subjects and bodies are
`str.format` templates filled by `sites.webmail.filler`.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_NAMES = (
    "Ana", "Ben", "Chloé", "David", "Elif", "Farid", "Hugo", "Ines", "Jonas", "Keiko", "Liam", "Nadia", "Oscar",
    "Paula", "Rafael", "Sofia", "Tariq", "Ursula", "Viktor", "Wen", "Yusuf", "Zara", "Aisha", "Bruno", "Clara",
    "Daniel", "Emma", "Felix", "Greta", "Hassan", "Isabel", "Jakub", "Kofi", "Laura", "Marco", "Nina", "Olga",
    "Pedro", "Rosa", "Stefan", "Carlos", "Lena", "Helen", "Priya", "Omar", "Mei", "Sam", "Grace",
)
"""First names; the last eight are fixed contacts' first names, so some filler people share one."""

LAST_NAMES = (
    "Okafor", "Lindqvist", "Moreau", "Silva", "Kowalski", "Brennan", "Ito", "Novak", "Duarte", "Berg", "Achebe",
    "Castillo", "Dubois", "Eriksen", "Fontaine", "Gallagher", "Horvat", "Iversen", "Jansen", "Kaur", "Lambert",
    "Marsh", "Nakamura", "O'Neill", "Petrov", "Quinn", "Rossi", "Sato", "Thorne", "Varga", "Weber", "Yilmaz",
    "Zielinski", "Fischbach", "Parker", "Ramos", "Haddon", "Tanaka-Reid",
)
"""Last names; some are a letter or two from a fixed contact's (Fischbach, Parker, Haddon)."""


@dataclass(frozen=True)
class Company:
    """A company filler people work for: its name, mail domain, phone prefix and what it does (`kind`)."""

    name: str
    domain: str
    phone: str
    kind: str
    """vendor (sends invoices and statements), partner (meetings, projects) or service (newsletters, notices)."""


COMPANIES = (
    Company("Acme Tools", "acmetools.example", "+44 121 496", "vendor"),
    Company("Bluefin Media", "bluefin.example", "+44 20 3885", "partner"),
    Company("Copperleaf Design", "copperleaf.example", "+44 117 496", "partner"),
    Company("Delta Freight", "deltafreight.example", "+31 20 555", "vendor"),
    Company("Northwind Freight", "northwind-freight.example", "+351 22 555", "vendor"),
    Company("Kestral Logistic", "kestral-logistic.example", "+49 40 5550", "vendor"),
    Company("Harbour Insurance", "harbourinsurance.example", "+44 131 496", "service"),
    Company("Fresh Fields Catering", "freshfields.example", "+44 161 496", "vendor"),
    Company("Larch & Finch Legal", "larchfinch.example", "+44 20 3886", "partner"),
    Company("Summit Office Supplies", "summitoffice.example", "+44 113 496", "vendor"),
    Company("Vantage Analytics", "vantage.example", "+1 646 555", "partner"),
    Company("Pinecrest Facilities", "pinecrest.example", "+44 114 496", "vendor"),
    Company("Orbit Telecom", "orbit-telecom.example", "+44 330 088", "service"),
    Company("Granite Recruitment", "granite-hr.example", "+44 20 3887", "partner"),
    Company("Meadow Print", "meadowprint.example", "+44 118 496", "vendor"),
    Company("Solent Shipping", "solent.example", "+44 23 8049", "vendor"),
    Company("Aurora Software", "aurora-soft.example", "+46 8 555", "partner"),
    Company("Cobalt Security", "cobaltsec.example", "+44 20 3888", "vendor"),
    Company("Willow Travel", "willowtravel.example", "+44 20 3889", "service"),
    Company("Tern Energy", "tern-energy.example", "+44 141 496", "vendor"),
    Company("Beacon Training", "beacontraining.example", "+44 29 2018", "partner"),
    Company("Quill Translations", "quill.example", "+33 1 5555", "partner"),
    Company("Ironbridge Consulting", "ironbridge.example", "+44 20 3890", "partner"),
    Company("Saffron Events", "saffronevents.example", "+44 161 497", "vendor"),
    Company("Lumen Lighting", "lumen.example", "+49 89 5550", "vendor"),
    Company("Brightlane", "brightlane.example", "+44 20 7946", "colleague"),
)
"""Filler companies. Brightlane is the mailbox owner's own company: its filler people are colleagues."""

MEETING_TOPICS = (
    "hiring plan", "Q2 roadmap", "supplier review", "office move", "training budget", "customer workshop",
    "website refresh", "warehouse audit", "contract renewal", "security review", "brand guidelines",
    "sales forecast", "onboarding checklist", "travel policy", "quarterly close",
)

PROJECT_SUBJECTS = (
    "Notes from the {topic} call", "Draft agenda: {topic}", "Update on the {topic}", "Question about the {topic}",
    "Slides for the {topic}", "Timeline for the {topic}", "Follow-up: {topic}",
)

PROJECT_BODIES = (
    "Hi Jordan,\n\nSharing a short update on the {topic}: we are on track and I will circulate the next draft by "
    "{day}.\n\nBest,\n{sender}",
    "Hello Jordan,\n\nCould you look over the attached notes on the {topic} before {day}? Comments inline are "
    "fine.\n\nThanks,\n{sender}",
    "Jordan,\n\nA quick question on the {topic}: do we still plan to finish it this quarter? Happy to talk it "
    "through on {day}.\n\n{sender}",
)

MEETING_SUBJECT = "Meeting request: {topic} on {day}"
MEETING_BODY = ("Hi Jordan,\n\nCould we meet about the {topic} on {day}? {hour}:00 or {later}:00 would suit me; "
                "let me know which works.\n\n{sender}\n{company}")

INVOICE_SUBJECTS = ("Invoice {number} for {month}", "Invoice {number}", "Your invoice {number} from {company}")
INVOICE_BODY = ("Dear Jordan,\n\nPlease find our invoice {number} for {month}. The amount due is {amount} EUR, "
                "payable by {due}.\n\nKind regards,\n{sender}\n{company}")
STATEMENT_SUBJECT = "Statement of account for {month}"
STATEMENT_BODY = ("Dear customer,\n\nYour statement for {month} is attached: {count} invoices, {amount} EUR "
                  "outstanding on {day_date}.\n\n{company} accounts team")
REMINDER_SUBJECT = "Payment reminder: invoice {number}"
REMINDER_BODY = ("Hello Jordan,\n\nOur records show invoice {number} ({amount} EUR) as unpaid; it was due on "
                 "{due}. Please ignore this if payment is on its way.\n\n{company} accounts team")

NEWSLETTER_SUBJECTS = (
    "{company} news for {month}", "New this month at {company}", "{company}: {month} offers",
    "Webinar invitation from {company}", "{company} service update",
)
NEWSLETTER_BODY = ("Hello,\n\nHere is what is new at {company} this {month}: product updates, events and a few "
                   "offers for existing customers.\n\nYou receive this because you are a customer of {company}.")

NOTICES = (
    ("Parcel tracking update", "Your parcel {code} is in transit and should arrive within three working days."),
    ("Your booking is confirmed", "Booking {code} is confirmed. Show this message at the desk on arrival."),
    ("Sign-in from a new device", "A new device signed in to your account ({code}). If this was you, do nothing."),
    ("Your monthly usage summary", "Your usage summary for the month is ready ({code})."),
    ("Receipt for your order {code}", "Thank you for your order {code}. This is your receipt."),
)

COLLEAGUE_SUBJECTS = (
    "Lunch on {day}?", "Cover for {day}", "Kitchen rota", "Desk booking for {day}", "Leaving drinks on {day}",
    "Parking spaces next week", "Team photo on {day}", "Printer on the third floor",
)
COLLEAGUE_BODY = "Hi Jordan,\n\n{line}\n\n{sender}"
COLLEAGUE_LINES = (
    "Are you free on {day}? A few of us are going out at 12:30.",
    "Could you cover the front desk on {day} morning? I have a dentist appointment.",
    "Just a reminder about {day}; let me know if you can make it.",
)

SENT_SUBJECTS = (
    "Re: {subject}", "Catch-up on the {topic}", "Figures for the {topic}", "Question on the {topic}",
)
SENT_BODY = "Hi {name},\n\nThanks for this. {line}\n\nJordan"
SENT_LINES = (
    "I will look at it before {day} and come back to you.",
    "{day} works for me.",
    "Could you send the latest version when you have it?",
)

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")
