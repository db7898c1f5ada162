"""The statement classifier behind core cleanup."""

from __future__ import annotations

import pytest

from openprogram_memory.placement.classify import (
    CATEGORIES,
    classify_statement,
    core_rank,
    explain_statement,
    project_name,
)


def _reads_as(text, category):
    assert classify_statement(text) == category
    assert explain_statement(text)[0] == category
    assert category in CATEGORIES


@pytest.mark.parametrize("text, category", [
    ("Always answer in metric units.", "rule"),
    ("Never invent tool results; report only what tools returned.", "rule"),
    ("Please reply in English unless asked otherwise.", "rule"),
    ("Don't use emojis.", "rule"),
    ("You must cite the source of every claim.", "rule"),
    ("Every answer must include its source.", "rule"),
    ('Sign every email you draft for me as "Kwame Mensah, Mobile Lead".', "rule"),  # (the ways of writing and
    ("cc Fatima on anything tax related.", "rule"),  # addressing the person's mail)
    ("Tag @lagosfoodwalks on anything food-related.", "rule"),
    ("Flag any email that mentions licensing for Tomasz.", "rule"),
    ("Loop in Priya on anything touching billing.", "rule"),
    ("I prefer short, direct answers.", "preference"),
    ("Dana likes espresso.", "preference"),
    ("Her favourite editor is Helix.", "preference"),
    ("She would rather get one good option than five.", "preference"),
    ("My name is Dana Reyes.", "identity"),
    ("Dana lives in Lisbon.", "identity"),
    ("Dana is a nurse.", "identity"),
    ("I speak Portuguese and English.", "identity"),
    ("Her time zone is Europe/Lisbon.", "identity"),
    ("Dana runs a bike shop.", "identity"),
    ("The user teaches year 5 at Holm Park Primary.", "identity"),  # (the writer's wordings of a role)
    ("The user is head of platform.", "identity"),
    ("The user joined the data team.", "identity"),
    ("The user moved to the payments squad.", "identity"),  # (a change of team, the writer's wording of it)
    ("The user switched to the growth team.", "identity"),
    ("The user transferred to the oncology department.", "identity"),
    ("The user is in Nairobi.", "identity"),
    ("The user works part time as a dental nurse.", "identity"),
    ("The user works full-time as a welder.", "identity"),
    ("The user works freelance as a sound engineer.", "identity"),
    ("The user studies at NTNU.", "identity"),
    ("The user is the EM.", "identity"),
    ("The user is the on-call contact.", "other"),
    ("The user mostly works on delivery ETA models.", "identity"),
    ("The user uses PyTorch Geometric, not DGL.", "preference"),
    ("I write everything in type-annotated Python.", "preference"),
    ("The ingest job uses Kafka.", "other"),
    ("The user is in a meeting until noon.", "other"),
    ("The Orbit project uses Postgres 16.", "project"),
    ("Use uv for the `orbit` repo.", "project"),
    ("Working on project Atlas: the migration.", "project"),
    ("Shipped v0.3 to the beta testers.", "project"),
    ("Fixed the login bug last night.", "project"),
    ("The deadline for the report is Friday.", "project"),
    ("The CI server is down right now.", "other"),
    ("The weather was nice.", "other"),
    ("Looks like the build is flaky today.", "other"),
])
def test_categories(text, category):
    _reads_as(text, category)


# The writer's wordings of rules, preferences and identity that a person writes every day. Each must reach the core:
# the organizer's cleanup moves whatever this classifier calls other out of topics/core.md.
@pytest.mark.parametrize("text, category", [
    ("From now on, reply in Dutch.", "rule"),  # (a lead-in that says it holds from now on)
    ("Going forward, when you draft invoices, put the PO number first.", "rule"),
    ("In general, reply with the shortest answer that works.", "rule"),
    ("Pls reply in Dutch to the suppliers.", "rule"),
    ("2) keep functions under 40 lines.", "rule"),
    ("When you write SQL, uppercase the keywords.", "rule"),  # (what to do when something happens)
    ("Whenever you write SQL, uppercase the keywords.", "rule"),
    ("If you're unsure of a dosage, say so.", "rule"),
    ("When u reply to tenants keep it friendly.", "rule"),
    ("If I paste a stack trace, point at the failing frame first.", "rule"),
    ("Any time you quote a price, add VAT.", "rule"),
    ("Before you merge anything, run the linters.", "rule"),
    ("If a supplier invoice is over 5k, ping Marta before paying.", "rule"),  # (the instruction after a condition)
    ("Once the budget is signed, cc the board.", "rule"),
    ("No emojis in client emails.", "rule"),  # (a ban without a verb)
    ("Metric units only.", "rule"),
    ("Metric units only please.", "rule"),
    ("Every migration needs a rollback script.", "rule"),  # (what every thing of a kind must have)
    ("Anything touching payroll has to go through Amal.", "rule"),
    ("Commit messages should follow conventional commits.", "rule"),  # (what a thing should be, with no verb
    ("Type hints everywhere.", "rule"),  # to begin it)
    ("Exports need to go through Priya.", "rule"),
    ("A patch release has to be signed off by Ana.", "rule"),
    ("Ping Dev before any release.", "rule"),  # (more imperatives)
    ("Round prices to the nearest euro.", "rule"),
    ("Assume zsh on macOS.", "rule"),
    ("Could you stop opening with a compliment.", "rule"),
    ("No rush on the draft.", "other"),  # (what those must not catch)
    ("No one on the team uses Vim.", "other"),
    ("Only two boxes left in the van.", "other"),
    ("Round 2 of the interviews went well.", "other"),
    ("Report is due at the end of the month.", "other"),
    ("When I visited Lima the food was great.", "other"),
    ("If the weather holds we might go hiking.", "other"),
    ("The user is the lab manager.", "identity"),  # (a role)
    ("The user is now marketing manager.", "identity"),
    ("The user is the only paralegal now.", "identity"),
    ("The user is the only SRE.", "identity"),
    ("The user is now a rates trader.", "identity"),
    ("The user is a court translator.", "identity"),
    ("The user is a conference interpreter.", "identity"),
    ("The user was a midwife for 35 years.", "identity"),
    ("The user is the only security person at Tallyrope.", "identity"),
    ("The user has been made head nurse as of this week.", "identity"),  # (from now on, not for this week)
    ("The user has been promoted to head coach.", "identity"),
    ("The user became practice manager.", "identity"),
    ("The user is head nurse this week.", "other"),
    ("The user does hydrological modelling.", "identity"),  # (the work the person does)
    ("The user mostly handles the admin side.", "identity"),
    ("Started at Nordvik Engineering last week.", "identity"),  # (said without "I")
    ("Freelancing full-time as a brand designer.", "identity"),
    ("Working out of a tiny flat in Pune.", "identity"),
    ("Still in Porto.", "identity"),
    ("Still in the queue.", "other"),
    ("The user moved to Harrogate in the spring.", "identity"),  # (where the person lives and works)
    ("The user relocated to Singapore.", "identity"),
    ("The user is living in Zurich.", "identity"),
    ("The user joined Babelfisk AB.", "identity"),
    ("The user works for a logistics firm.", "identity"),
    ("The user is working as a barista.", "identity"),
    ("The user left Siemens.", "identity"),
    ("The user quit Tesco.", "identity"),
    ("The user manages three branches of GreenLeaf.", "identity"),
    ("The user maintains the Kiln static site generator.", "identity"),
    ("The user is at the Max Planck Institute.", "identity"),
    ("The user is with the Pune Municipal Corporation.", "identity"),
    ("Tagalog is the user's first language.", "identity"),
    ("The user moved the stand-up to Thursday.", "other"),
    ("The user is the one who books the rooms.", "other"),
    ("The user finds pandas syntax hideous.", "preference"),  # (likes and dislikes, as people say them)
    ("The user loathes Jira.", "preference"),
    ("The user hated Square.", "preference"),
    ("Sqlc is the user's go-to for Go services.", "preference"),
    ("The user wants answers in bullets.", "preference"),
    ("The user would like one step at a time.", "preference"),
    ("Dark mode works best for the user.", "preference"),
    ("The user is more of a tea person.", "preference"),
    ("The user is fine with golden files.", "preference"),
    ("The user really doesn't like long intros.", "preference"),
    ("The user does love a good sponge cake.", "preference"),
    ("Shorter study blocks work way better for the user.", "preference"),
    ("Notebooks are fine for poking around.", "preference"),
    ("Mermaid is fine for diagrams.", "preference"),
    ("Emojis in summaries are fine by the user.", "preference"),
    ("Blue and orange is best for the user.", "preference"),
    ("Nested IFs make the user's eyes bleed.", "preference"),
    ("Adobe subscriptions make the user want to scream.", "preference"),
    ("Overleaf's track changes drive the user nuts.", "preference"),
    ("Bullet points over paragraphs.", "preference"),
    ("Pytest fixtures > unittest setUp methods.", "preference"),
    ("The user mostly writes C for STM32.", "preference"),
    ("The user mostly drafts in MicroStation.", "preference"),
    ("The user can't bear podcasts.", "preference"),
    ("The user is happiest in Excel.", "preference"),
    ("The user is more comfortable with vim keybindings.", "preference"),
    ("The user tends to like terse answers.", "preference"),
    ("The user is not fond of scientific notation.", "preference"),
    ("The deploy ran over the weekend.", "other"),  # (not "X over Y")
])
def test_everyday_wordings(text, category):
    _reads_as(text, category)


# one wording per signal the classifier reads (each fails when its alternative is taken out)
@pytest.mark.parametrize("text, category", [
    ('Convert prices to euros.', 'rule'),
    ('Pick the cheapest option.', 'rule'),
    ('Stick to British spelling.', 'rule'),
    ('Add the ticket number to every commit.', 'rule'),
    ('Treat warnings as errors.', 'rule'),
    ('Leave the headers alone.', 'rule'),
    ('Pull the action items into a table.', 'rule'),
    ('Turn long lists into tables.', 'rule'),
    ('Route refund questions to Ama.', 'rule'),
    ('Generate migrations with alembic.', 'rule'),
    ('Pin exact versions.', 'rule'),
    ('Factor in the school run.', 'rule'),
    ('Aim for a reading age of nine.', 'rule'),
    ('Sort invoices by due date.', 'rule'),
    ('Spell out acronyms the first time.', 'rule'),
    ('Comment the units on every variable.', 'rule'),
    ('Quote shell variables.', 'rule'),
    ('Rename test files to match modules.', 'rule'),
    ('Rewrite passive sentences as active ones.', 'rule'),
    ('Break long answers into sections.', 'rule'),
    ('Drop the pleasantries.', 'rule'),
    ('Freeze the header row in spreadsheets.', 'rule'),
    ('Bold the key number.', 'rule'),
    ('Batch your questions.', 'rule'),
    ('Go easy on the jargon.', 'rule'),
    ('Remind me of deadlines three days ahead.', 'rule'),
    ('Page the on-call lead for outages.', 'rule'),
    ('Mask card numbers.', 'rule'),
    ('Highlight anything overdue.', 'rule'),
    ('Translate quotes into English.', 'rule'),
    ('Ignore the legacy folder.', 'rule'),
    ('Wrap lines at 80 characters.', 'rule'),
    ('Split big PRs.', 'rule'),
    ('Prefix branch names with the ticket id.', 'rule'),
    ('Group expenses by month.', 'rule'),
    ('Indent YAML with two spaces.', 'rule'),
    ('Lowercase SQL keywords.', 'rule'),
    ('Capitalise product names.', 'rule'),
    ('Trim trailing whitespace.', 'rule'),
    ('Strip tracking parameters from links.', 'rule'),
    ('Label charts in plain words.', 'rule'),
    ('Warn me before deleting anything.', 'rule'),
    ('Point out typos.', 'rule'),
    ('When I say ship it, open the release PR.', 'rule'),
    ('If I share a screenshot, describe it first.', 'rule'),
    ('When I forward an invoice, log it.', 'rule'),
    ('If I upload a CSV, check the headers.', 'rule'),
    ('When I give you a draft, keep my voice.', 'rule'),
    ('If I mention a client, check the CRM.', 'rule'),
    ('Every time you refactor, run the tests.', 'rule'),
    ('Each time you answer, cite the page.', 'rule'),
    ('After you edit a file, run the formatter.', 'rule'),
    ('When the build breaks, ping Dev.', 'rule'),
    ('Any time the budget moves, tell Amal.', 'rule'),
    ('Every time a client calls, add a note.', 'rule'),
    ('Each time a test fails, flag it.', 'rule'),
    ('Before a release goes out, tag it.', 'rule'),
    ('After a deploy finishes, check the logs.', 'rule'),
    ('Unless Ana says otherwise, cc the board.', 'rule'),
    ('If I ask for a summary keep it short.', 'rule'),  # (no comma: the condition read as one)
    ('If I send a contract flag the indemnity clause.', 'rule'),
    ('Any time you quote a price add VAT.', 'rule'),
    ('Every time you answer cite the page.', 'rule'),
    ('Each time you refactor run the tests.', 'rule'),
    ('Before you merge run the linters.', 'rule'),
    ('After you deploy check the logs.', 'rule'),
    ('Every invoice should be sent today.', 'rule'),  # (for every invoice, not a status of today)
    ('Every invoice must be sent today.', 'rule'),
    ('Every invoice has to be sent today.', 'rule'),
    ('All invoices have to be sent today.', 'rule'),
    ('Any PR needs a reviewer.', 'rule'),
    ('Anything for the board needs a cover page.', 'rule'),
    ('Everything goes through Argo.', 'rule'),
    ('The user is working for Hallberg Energi.', 'identity'),
    ('Nothing goes out without a second read.', 'rule'),
    ('Each invoice gets a PO number.', 'rule'),
    ('All drafts stay in the shared folder.', 'rule'),
    ('Every script has to have a docstring.', 'rule'),
    ('Every chart must have a title.', 'rule'),
    ('Any new dependency should be pinned.', 'rule'),
    ('Every PR have to link a ticket.', 'rule'),
    ('Every invoice goes through Tomasz.', 'rule'),
    ('All receipts go to the finance inbox.', 'rule'),
    ('No body text yet in the draft.', 'other'),
    ('No idea why the build failed.', 'other'),
    ('No problem with the invoice.', 'other'),
    ('No problems with the upload.', 'other'),
    ('No worries about the delay.', 'other'),
    ('No thanks needed.', 'other'),
    ('No way the shipment lands on time.', 'other'),
    ('No longer at the old address.', 'other'),
    ('No matter, the file came through.', 'other'),
    ('No doubt the vendor will call.', 'other'),
    ('No luck with the printer.', 'other'),
    ('No need to worry about the printer.', 'other'),
    ('In the future, reply in Dutch.', 'rule'),
    ('Just reply in Dutch.', 'rule'),
    ('Abeg reply in Pidgin.', 'rule'),
    ('The user runs Kinetica Physio in Dunedin.', 'identity'),
    ('The user owns Rahman Bakery.', 'identity'),
    ('The user coordinates Eastside Food Bank.', 'identity'),
    ('The user co-maintains Tidepool.', 'identity'),
    ("English is the user's second language.", 'identity'),
    ("Gaelic is the user's native language.", 'identity'),
    ('The user works at a logistics firm.', 'identity'),
    ('Working as a barista at weekends.', 'identity'),
    ('Started as quality lead at Sanko.', 'identity'),
    ('Still at Mbeya Logistics.', 'identity'),
    ('The user is now at Revolut.', 'identity'),
    ('The user is the only SRE here.', 'identity'),
    ('Short answers are best for the user.', 'preference'),
    ('The user loathe Jira.', 'preference'),
    ('The user is an early-morning person.', 'preference'),
    ('The user fell over a cable.', 'other'),
    ('The user talked over an hour.', 'other'),
    ('The user handed it over to Ana.', 'other'),
    ('The user came over here.', 'other'),
    ('The user picked it up over there.', 'other'),
    ('Emojis make the user cringe.', 'preference'),
    ('The user genuinely likes long reads.', 'preference'),
    ('Backups have to be encrypted.', 'rule'),
    ('Invoices need to be in euros.', 'rule'),
])
def test_each_signal(text, category):
    _reads_as(text, category)


def test_reasons_are_readable():
    category, reason = explain_statement("The Orbit project uses Postgres 16.")
    assert category == "project" and "Orbit" in reason
    assert "always" in explain_statement("Always answer in metric.")[1].lower()


def test_where_the_person_works_stays_who_they_are_beside_a_project_of_that_name():
    assert classify_statement("The user works at Larkspur Books.", known_projects=["larkspur-books"]) == "identity"
    assert classify_statement("The user now works for Larkspur Books.", known_projects=["larkspur-books"]) == "identity"
    assert classify_statement("Larkspur Books ships 300 orders a week.", known_projects=["larkspur-books"]) == "project"


def test_known_projects_win():
    assert classify_statement("Remember that Zephyr needs Python 3.12.") == "rule"
    assert classify_statement("Remember that Zephyr needs Python 3.12.", known_projects=["zephyr"]) == "project"
    assert project_name("deploying zephyr-cli tonight", ["zephyr cli"]) == "zephyr cli"


@pytest.mark.parametrize("text, name", [
    ("The Orbit project uses Postgres.", "Orbit"),
    ("project Atlas is late", "Atlas"),
    ("in the `orbit` repo", "orbit"),
    ("the side project is fun", None),
    ("a big project", None),
    ("this project deadline", None),
])
def test_project_name(text, name):
    assert project_name(text) == name


def test_core_rank_orders_rules_preferences_identity():
    assert [core_rank(c) for c in ("rule", "preference", "identity", "project", "other")] == [0, 1, 2, 3, 3]


def test_the_team_a_person_is_on_is_identity():
    assert classify_statement("The user is on the payments team.") == "identity"
    assert classify_statement("The user is part of the growth squad.") == "identity"
