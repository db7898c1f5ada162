"""Durable statements in what the person said: the rules writer's extractor.

:func:`extract_statements` reads one user message and returns the
statements worth keeping, each lightly normalized (see
:mod:`~openprogram_memory.writer.phrasing`) and sorted into one of eight
kinds (:data:`KINDS`):

- **identity** — who the person is: name, role, employer, home, languages,
  pronouns, team ("I'm Ravi Patel", "backend engineer at Acme", "i live in
  Pune");
- **people** — other people and what they own, do or decide ("Priya owns
  billing", "my manager Tom signs off releases");
- **preference** — likes and dislikes ("i prefer tabs", "I can't stand
  verbose answers", "I mostly work in Go");
- **rule** — standing instructions ("always run ruff first", "never push
  to main", "when you write SQL, use lowercase keywords", "One more rule:
  …");
- **decision** — decisions and changes of mind ("we're dropping Redis for
  Memcached", "let's stick with REST", "Team decision: Postgres 16");
- **fact** — durable facts about systems and projects ("the gateway runs
  on Kubernetes", "staging deploys from develop");
- **schedule** — recurring schedules and standing dates ("we deploy every
  Tuesday", "standup is at 9:30");
- **personal** — durable personal facts (family, pets, diet, health,
  hobbies, birthday, time zone).

How a message is read (:mod:`~openprogram_memory.writer.segment`): text the
agent or its runtime produced yields nothing; code, logs and markup are
dropped; sentences are cut without needing capitals; clauses are cut
where a new "I"/"we" clause starts; lead-ins ("Quick thing:", "Heads up —")
are stripped and may hint the kind. Each clause then passes negative
filters first — questions, hypotheticals, reported speech, opinions on
the problem at hand, moment-bound or status talk — and only then the
kind detectors, in a fixed order. A sentence the detectors read nothing
in goes to a classifier trained on the labelled corpus
(:mod:`~openprogram_memory.writer.learned`); what it is sure of is kept
in the person's words, said of "the user", with a leading "he/she/it"
named or the sentence dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..placement.classify import CORE_CATEGORIES, WORK_FIELD
from ..workspace.caches import register_index
from . import learned, wordvectors
from . import lexicon as lx
from .negatives import FIRST_I as _I
from .negatives import FIRST_IM as _IM
from .negatives import RANGE_RE as _RANGE_RE
from .negatives import REASONING_RE as _REASONING_RE
from .negatives import ONLY_WHEN as _ONLY_WHEN
from .negatives import STANDING_RE as _STANDING_RE
from .negatives import is_negative
from .phrasing import ADVERBS, about_user, conjugate, finish, first_person, keyword, third_person
from .segment import (WHEN_FIRST_RE, agent_generated, clauses, cut_outside_quotes, hide_quoted_comments, label_hint,
                      marked_sentences, show_quoted_comments, strip_lead)

if TYPE_CHECKING:
    from ..workspace.caches import FileSummary, RecordInfo, TreeState

KINDS = ("identity", "people", "preference", "rule", "decision", "fact", "schedule", "personal")


@dataclass(frozen=True)
class Statement:
    """One durable statement: normalized ``text``, its ``kind``, a ``keyword`` label.

    ``slot`` names a single-valued person attribute ("name", "role",
    "employer", "location", "timezone", "pronouns") so a new value updates
    the old record in place; ``old`` is an explicitly replaced value
    ("switched from Flask") for the same purpose. ``subject`` is the
    project, thing or person a statement is about. ``doubted`` marks an
    identity, preference or rule statement whose kind the corpus-trained
    classifier gives its sentence little chance of (:data:`~.learned.DOUBT`)
    while it reads a kind that is not for the core there: kept, but the
    writer does not put it in the core, which every session is given.
    """

    text: str
    kind: str
    keyword: str
    slot: str | None = None
    old: str | None = None
    subject: str | None = None
    doubted: bool = False  # the corpus-trained classifier finds this kind unlikely in its sentence: not for the core


_ADV = rf"(?:\s+{ADVERBS})*"

# -- names ---------------------------------------------------------------------------


def _is_name_word(word: str) -> bool:
    bare = word.rstrip(".,'’-")
    return (len(bare) >= 2 and bare[0].isupper() and not re.match(r"I['’]", bare) and not bare.isupper() and any(c.islower() for c in bare[1:])
            and re.sub(r"['’](?:s|re|ll|d|ve)$", "", bare).casefold() not in lx.COMMON_CAPS) or (
                len(bare) == 2 and bare[0].isupper() and bare[1] == ".")  # ("He's", "They're": no names)


def leading_name(text: str, max_words: int = 3) -> str | None:
    """The personal name ``text`` starts with (1–3 capitalized words, after an optional title), or None."""
    words = text.split()
    picked = []
    if words and words[0] in ("Dr.", "Dr", "Mr.", "Mrs.", "Ms.", "Prof.", "Mx.") and len(words) > 1:
        picked.append(words.pop(0))
        if not _is_name_word(words[0].rstrip(",.;:!")):
            return None
    for word in words[:max_words]:
        if not _is_name_word(word.rstrip(",.;:!")) and not (picked and re.fullmatch(r"(?-i:[A-HJ-Z])[,;:!]?", word)):
            break  # ("Coach V", "Maria G": a last initial after a name; not "Priya I …")
        picked.append(word.rstrip(",.;:!"))
        if word[-1:] in ",.;:!":
            break
    return " ".join(picked) or None


# -- identity --------------------------------------------------------------------------
# what the person is called, said without "name" ("call me Ana", "everyone calls me sam")
_CALL_ME = r"(?:(?:you can|please|people|everyone|everybody|friends|most people)\s+)?calls?\s+me"
_CALL_ME_RE = re.compile(rf"{_CALL_ME}\b", re.I)
_NAME_LEAD_RE = re.compile(
    rf"^(?:(?:my )?name(?:'s| is)|{_CALL_ME}|i go by|this is|it's|its|myself|"
    rf"{_IM}|here's|hi,? {_IM}|hey,? {_IM}|hello,? {_IM}|"
    rf"soy|me llamo|mi nombre es|je suis|je m'appelle|ich bin|ich heiße|mi chiamo|sono|eu sou|saya)\s+",  # (in their own tongue)
    re.I,
)
# words that start no bare job title after "I'm" ("I'm not developer", "I'm the one …" has its article)
_NOW = r"now|currently|actually|also|still|basically|officially"  # said between "I'm" and the job
_NOT_A_ROLE = (rf"(?:{_NOW}|not|no|so|too|very|really|just|more|less|kind|sort|like|the|a|an|on|in|at|with|for|from|done|"
               r"going|getting|looking|working|trying|busy|happy|fine|ok|okay|your|his|her|their|our|my)\b")
_ROLE_RE = re.compile(
    rf"^(?:{_IM}(?:\s+(?:{_NOW}))?\s+(?:an?\s+|the\s+|"
    rf"(?=(?:[\w-]+\s+){{0,2}}(?-i:(?:[A-Z]{{2,4}}|lead|head|senior|junior|staff|principal|chief))\b)|"
    rf"(?=(?!{_NOT_A_ROLE})(?:[\w-]+\s+){{0,2}}(?:{lx.ROLE_NOUNS})(?:\s+(?:at|in|for|with|of|on)\s|\s*[,.;!]|\s*$)))|"
    rf"{_I}(?:'ve| have) been (?:an?|the)\s+|{_I}{_ADV}\s+(?:do|am doing|'m doing)\s+(?=.+\bfor a living\b)|"
    rf"{_I}{_ADV}\s+do\s+(?=(?:[\w-]+\s+){{1,3}}?(?:at|for)\s+(?:an?\s+|(?-i:[A-Z])))|"
    rf"{_I}{_ADV}\s+work\s+(?:[\w-]+\s+){{0,2}}?as\s+(?:an?|the)?\s*|{_IM}{_ADV}\s+working\s+as\s+(?:an?|the)?\s*|{_I}(?:'ve| have)? (?:been )?(?:promoted|hired) (?:to|as)\s+(?:an?\s+)?|"
    rf"my (?:role|job|title|job title|position) (?:is|was changed to)\s+(?:an?\s+)?)(?P<v>.+)$",
    re.I,
)
# where the person is, not whom they work for ("I'm at a conference", "I'm with a client", "I'm at the gym", "I'm at
# our offsite")
_SOMEWHERE = r"(?:(?:a|an|my|our|work|lunch)\b|the\s+(?-i:[a-z]))"
_EMPLOYER_RE = re.compile(
    rf"^(?:{_I}{_ADV}(?:\s+(?:remotely|full-time|part-time|freelance|fully remote))?\s+(?:work|am working|'m working)"
    rf"(?:\s+(?:remotely|full-time|part-time|freelance|fully remote))?\s+(?:at|for)\s+|{_IM}\s+(?:(?:now|currently|still)\s+)?(?:(?:at|with)\s+(?!{_SOMEWHERE})|"
    rf"employed by\s+|working (?:at|for)\s+)|{_I}(?:'ve| have)?{_ADV}\s+(?:joined|started at|started working at)\s+|"
    rf"my (?:employer|company|day job) is\s+|{_I}{_ADV}\s+(?:study|am studying|'m studying)\s+at\s+|{_I}(?:'ve| have) been (?:at|with|working (?:at|for))\s+|"
    rf"{_I}{_ADV}\s+(?:co-?founded|founded|started|run|own)\s+(?=(?-i:[A-Z]))|{_IM}\s+(?:the\s+)?(?:co-?)?founder of\s+|"
    rf"{_I}{_ADV}\s+(?:start(?:ed|ing)?|begin|began)\s+(?:work(?:ing)?\s+)?at\s+|{_I}(?:'ve| have)?\s+(?:left|quit)\s+.+?,?\s+(?:and\s+)?"
    rf"(?:(?:I'm|i'm|im|I am)\s+)?(?:now\s+)?(?:at|with|working (?:at|for)|joined)\s+)(?P<v>.+)$",
    re.I,
)
_LOCATION_RE = re.compile(
    rf"^(?:{_I}{_ADV}\s+(?:live|reside|stay)\s+in\s+|{_IM}(?:\s+now)?\s+(?:based|living|located)\s+(?:in|out of)\s+|"
    rf"{_I}(?:'ve| have)?{_ADV}\s+(?:moved|relocated|shifted)\s+(?:from\s+(?:[A-Z][\w'’-]*\s+){{1,3}})?(?:to|back to)\s+|"
    rf"{_IM}\s+(?:now\s+)?in\s+(?=[A-Z])|{_I}{_ADV}\s+(?:sit|am sitting|'m sitting|am based)\s+in\s+(?=[A-Z])|"
    rf"{_IM}\s+(?:originally\s+)?from\s+|home is\s+|{_I}\s+work\s+(?:remotely\s+)?(?:from|out of(?=\s+(?:the\s+)?[A-Z]))\s+)(?P<v>.+)$",
)
_LOCATION_I_RE = re.compile(_LOCATION_RE.pattern, re.I)
_LANGUAGE_RE = re.compile(
    rf"^(?:{_I}{_ADV}\s+speak\s+|{_IM}\s+(?:a\s+)?(?:native|fluent)\s+|my (?:native|first|mother) (?:language|tongue) is\s+|"
    rf"{_IM}\s+fluent in\s+)(?P<v>.+)$",
    re.I,
)
_FIRST_LANGUAGE_RE = re.compile(r"^(?P<v>(?-i:[A-Z]\w+)(?:\s+and\s+(?-i:[A-Z]\w+))?)\s+(?:is|are)\s+my\s+"
                                r"(?:first|native|mother|main|second|third|home)\s+(?:language|tongue)s?\b", re.I)
_PRONOUNS_RE = re.compile(r"^(?:my pronouns are|i use|pronouns:?)\s+(?P<v>(?:she|he|they|xe|ze|it)/\w+.*)$", re.I)
_TEAM_RE = re.compile(
    rf"^(?:{_IM}\s+(?:on|in|part of|a member of|with)\s+(?:the\s+)?|{_I}{_ADV}\s+(?:work on|belong to|sit on|sit in|"
    rf"joined)\s+(?:the\s+)?|{_I}(?:'ve| have)?{_ADV}\s+(?:moved|switched|transferred)(?:\s+over)?"
    rf"(?:\s+from\s+(?:[\w&/+-]+\s+){{0,3}}?[\w&/+-]+)?\s+to\s+(?:the\s+)?"
    rf"(?=(?:[\w&/+-]+\s+){{0,4}}?(?:team|squad|department)\b)|{_I}{_ADV}\s+(?:run|lead|manage|head|own)\s+(?:the\s+|a\s+|an\s+|our\s+)?)"
    rf"(?P<v>(?!(?:the\s+)?office\b)(?:[\w&/+-]+\s+){{0,4}}?(?:team|squad|group|department|org|tribe|guild|crew|lab|division|unit|"
    rf"company|startup|studio|agency|business|shop|practice|clinic|consultancy|chapter|pod|office|committee|"
    rf"programme|program|unit|lab)\b.*|(?:[\w-]+\s+)?(?:engineering|design|analytics|research|marketing|sales|security|"
    rf"operations|ops|support|product|infrastructure|infra|platform|qa|testing|finance|growth|devops|data science)"
    rf"(?=\s+(?:at|for)\s|$).*)$",  # (or a field of work: "I run data engineering at …")
    re.I,
)
_EMPLOYER_IN_RE = re.compile(r"\b(?:at|for|with)\s+(?P<e>(?:the\s+)?[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*){0,2})")
# "at a fintech called Ledgerly", "at a small insurance firm (Verdana Mutual)", "at a studio in Manila (Bituin
# Games)": the name after what the employer is (not the city after its name: "at Lumen Ledger (Zagreb)")
_CALLED_RE = re.compile(r"\s+(?:at|for|with)\s+(?:an?\s+)?(?:[\w-]+\s+){0,3}?(?:(?:called|named)\s+|"
                        r"(?:[a-z]|(?<=in\s)[A-Z])[\w-]*\s+\()"
                        r"(?P<e>[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*){0,2})")
# where an employer's name ends inside a role ("at Paystack's Lagos office, team checkout")
_EMPLOYER_END_RE = re.compile(r"\s*[,;(]|\s+(?:on|in|as|and|but|so|because|where|which|who|since|now|these days)\s+|"
                              r"\s+(?:now|these days|(?:this|last) \w+)$")


def _works_at(employer: str, now: str = "", studies: bool = False) -> Statement:
    """The employer record: "The user works at Globex." ("now works at" after leaving another; "studies at")."""
    return Statement(finish(f"The user {now}{'studies' if studies else 'works'} at {employer}"), "identity",
                     keyword(employer), "employer")


# a place said alone after a job ("…, Bangalore", "…, New York")
_BARE_PLACE_RE = re.compile(r"(?P<p>(?-i:[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+){0,2}))(?:\s+office)?")


def _place_in(value: str) -> list[Statement]:
    """Where a job is, when its phrase ends with it ("data engineer at Glovo in Barcelona")."""
    value = re.sub(r"\s+(?:now|these days|nowadays|at the moment|currently)$", "", value)
    place = re.search(r"\s+in\s+(?P<p>(?-i:[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+){0,3}))$", value)
    if place is None or lx.THING_RE.fullmatch(place.group("p")) or re.fullmatch(lx.MONTHS, place.group("p"), re.I):
        return []  # ("transferred to the fraud squad in March": when, not where)
    return [Statement(finish(f"The user is based in {place.group('p')}"), "identity", place.group("p"), "location")]


def _without_place(value: str, place: list[Statement]) -> str:
    """``value`` without the place (:func:`_place_in`) its phrase ends with: "a nurse based in Leeds" → "a nurse" ("a
    clerk in a logistics company here in Manila": "here" said where, too)."""
    return re.sub(rf"(?:\s+(?:based|here|out))?\s+in\s+{re.escape(place[0].keyword)}$", "", value) if place else value


def _as_role(value: str) -> tuple[str, list[Statement]]:
    """``value`` without the role it ends with, and that role's records ("Umbrella Corp as a platform lead")."""
    role = re.search(r"\s+as\s+(?P<r>.+)$", value)
    if role and lx.ROLE_RE.search(role.group("r")):
        return value[:role.start()], _appositive(role.group("r"))
    return value, []


def _job_parts(value: str) -> tuple[str, str | None]:
    """A role phrase cut before the employer it names, and that employer ("data engineer at Glovo" → "data engineer",
    "Glovo"); the employer is a record of its own, so a new job replaces it and leaves the role alone."""
    found = _CALLED_RE.search(value) or _EMPLOYER_IN_RE.search(value)  # ("at a fintech called Ledgerly")
    if not found or not _looks_like_org(re.sub(r"^the\s+", "", found.group("e"))):  # ("at the University of …")
        return value, None
    employer = _EMPLOYER_END_RE.split(value[found.start("e"):], maxsplit=1)[0].strip(" )")
    return value[:found.start()].rstrip(" ,"), employer


# when a change about the person took effect ("as of this week I'm …"): the record is what holds now
_SINCE_RE = re.compile(rf"^(?:as of|since|starting|from)\s+(?:(?:this|last|next)\s+)?(?:week|month|year|today|yesterday|"
                       rf"{lx.DAYS}|{lx.MONTHS})(?:\s+on)?\s*,?\s+(?=(?:I|i)\b|im\b)", re.I)

# a new job said with when it starts: "starting at Halden Health next week as …", "I start Monday as ops director at …"
_STARTS_RE = re.compile(rf"^(?:(?:{_IM}|{_I}(?:'ve| have| will|'ll)?)\s+)?(?:start(?:ed|ing|s)?|begin(?:ning)?|began)\s+"
                        rf"(?:(?:on|this|next|last)\s+)?(?:(?:{lx.DAYS})s?|week|month)?\s*(?P<rest>(?:as\s|at\s+(?!\d)).+)$", re.I)  # (not "I start at 7")
_WHEN_IN_RE = re.compile(rf"(?<!\bof),?\s+(?:on|this|next|last|from)\s+(?:(?:{lx.DAYS})|week|month)\b",
                         re.I)  # (when, not what: not "the 1st of this month" nor "the Saturday cricket programme")

_OTHER_TIME = r",?\s+and\s+(?=the rest\b)"  # "… at Elm Park Primary and the rest of the week I …": not the job's
_WHEN_END_RE = re.compile(rf",?\s+(?:(?:from|on|starting)\s+)?(?:(?:next|this|last)\s+)?(?:week|month|{lx.DAYS})$", re.I)


# a nationality said with "I'm" ("I'm Kenyan", "I'm British-Nigerian"): checked word by word against
# :data:`~.lexicon.DEMONYMS`
_NATIONALITY_RE = re.compile(r"(?P<n>(?-i:[A-Z])[^\W\d_]+(?:(?:-|\s+and\s+)(?-i:[A-Z])[^\W\d_]+)?)(?=\s*(?:[,(;.!—–]|$))")

# a job title in capitals where a name would be: "I'm Head of Regulatory at …", "I'm Lead Engineer …" (not "I'm Dean
# Martin": a name that is also a job)
_TITLE_RE = re.compile(rf"(?:{lx.ROLE_NOUNS})(?:\s+of\b|\s+(?:{lx.ROLE_NOUNS})\b|\W*$)", re.I)


_HEADCOUNT_RE = re.compile(r"\b\d+[- ]person\b", re.I)  # "a 12-person publisher": a firm, not a job


# what the person is responsible for at work: "I look after our deploy scripts", "I'm responsible for the billing API"
_OWNS_RE = re.compile(rf"^(?:{_I}{_ADV}\s+(?:own|co-own|look after)|{_IM}{_ADV}\s+responsible for)\s+"
                      rf"(?P<v>(?:the|our)\s+(?:[\w.&/+-]+\s+){{0,3}}?(?:{lx.THINGS})\b.*)$", re.I)


def _identity(clause: str) -> list[Statement]:
    clause = re.sub(r"^(?:my\s+)?day\s+job(?:'s|\s+is)\s+(?=(?-i:[A-Z])|an?\s)", "I'm ", clause, flags=re.I)  # "day job
    # is SRE at a bank in Dublin"
    here = re.match(r"^(?P<r>[\w .+#/&-]+?)\s+here\W*$", clause, re.I)
    if here and not _NAME_LEAD_RE.match(clause):  # ("this is Ravi here": a name)
        role = re.sub(r"^just\s+", "", here.group("r"), flags=re.I)
        return _appositive(role[:1].lower() + role[1:] if role[1:2].islower() else role)  # "Backend dev at Shopify
        # here.": who is writing
    lead = _NAME_LEAD_RE.match(clause)
    nation = _NATIONALITY_RE.match(clause[lead.end():]) if lead and re.match(_IM, clause) else None
    if lead and nation and all(w.casefold() in lx.DEMONYMS for w in re.findall(r"[^\W\d_]+", nation.group("n")) if w != "and"):
        out = [Statement(finish(f"The user is {nation.group('n')}"), "identity", nation.group("n"))]
        for part in re.split(r"\s*,\s*(?:and\s+)?", clause[lead.end() + nation.end():].strip(" ,")):
            out.extend(_identity(f"I'm {part}") if part else [])  # ("…, native Portuguese", "…, based in Nairobi")
        return out  # "I'm Kenyan, based in Nairobi": where the person is from, and the rest said of them
    if lead:
        rest = clause[lead.end():]
        name = leading_name(rest)
        if name and not _LOCATION_RE.match(clause) and not re.match(r"(?:at|from|in|on|with)\b", rest, re.I) and \
                not re.search(r"['’]s$", name) and not _TITLE_RE.match(rest):  # ("it's Ana's": whose, not a name)
            tail = rest[len(name):].strip(" ,")
            words = [w for w in name.split() if not w.endswith(("ese", "ish", "ian", "ean", "can"))]
            if words:
                out = [Statement(finish(f"The user's name is {name}"), "identity", name, "name")]
                parts: list[str] = []
                for part in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+(?=(?:a|an|based|living|from|on|at)\b)", tail):
                    if parts and _BARE_PLACE_RE.fullmatch(part.strip(" .")) and re.search(r"\s(?:at|in)\s", parts[-1]):
                        parts[-1] += f", {part}"  # ("Karthik, Java developer in Infosys, Bangalore": one job)
                    else:
                        parts.append(part)
                for part in parts:
                    out.extend(_appositive(part))
                return out
    for slot, pattern in (("pronouns", _PRONOUNS_RE), ("languages", _LANGUAGE_RE), ("languages", _FIRST_LANGUAGE_RE),
                          ("team", _TEAM_RE)):
        match = pattern.match(clause)
        if match and slot == "team":  # "I lead the data team at Corvid Health, based in Dublin": three records
            head, *appositives = re.split(r"\s*,\s*(?:and\s+)?", match.group("v"))
            head, roles = _as_role(head)
            team, employer = _job_parts(head)
            where = _place_in(head)  # "I run a small repair shop for bikes in Marseille", "the cardiac team at Aga Khan
            # hospital in Karachi": where, a record of its own
            team = _without_place(team, where)
            called = re.search(r"\s(?:called|named)\s+(?P<e>(?-i:[A-Z]).*)$", head)
            if called and employer is None:  # "I joined a small agency called Moss & Pine": where the person works
                team, employer = "", _EMPLOYER_END_RE.split(called.group("e"), maxsplit=1)[0]
            out = [Statement(finish(third_person(clause[:match.start("v")] + team)), "identity", keyword(team), slot)
                   ] if team else []
            if employer:
                out.append(_works_at(employer))
            return out + roles + where + [s for part in appositives for s in _appositive(part)]
        if match:
            value = match.group("v")
            return [Statement(finish(_possessive(third_person(clause))), "identity", keyword(value), slot)]
    owns = _OWNS_RE.match(clause)
    if owns:
        return [Statement(finish(third_person(clause)), "identity", keyword(owns.group("v")))]
    match = _LOCATION_RE.match(clause) or (_LOCATION_I_RE.match(clause) if re.search(
        r"\b(?:live|based|moved|relocated|from)\b", clause, re.I) else None)
    if match and not lx.THING_RE.match(re.sub(r"^(?:the|this|that|my|our)\s+", "", match.group("v"), flags=re.I)) and not \
            re.match(rf"(?:the\s+)?office\b|home\b.*\b(?:{lx.DAYS})s?\b", match.group("v"), re.I):
        # ("I work from the office on Mondays", "… from home on Fridays": when, read as a schedule)
        value = match.group("v")  # ("based in the repo root" is no place)
        place = re.split(r"\s*\(|\s+(?:so|and|but|because|since|which|where|while|for|if|bc|cause)\s+|\s+[—–-]\s+|;",
                         value)[0]
        head, comma, rest = place.partition(",")
        if comma and (_TIMEZONE_RE.search(rest) or not re.match(r"\s*(?-i:[A-Z])", rest)):
            place = head  # "Lisbon, so …" and "Lisbon, UTC+1" end the place; "Oslo, Norway" does not
        if _TIMEZONE_RE.search(place):
            return []
        if re.match(r"\s*(?:all day|every day|most days|day to day|day in day out|24/7)\b", value[len(place):], re.I) or \
                re.search(r"\s(?:all day|every day|most days)$", place, re.I) or re.search(r"\blive\s+in\s", clause) and (
                re.match(r"\s+for\s", value[len(place):]) or re.search(r"\b(?:basically|practically|pretty much)\s+live\b",
                                                                      clause, re.I) or place.split()[0].casefold() in lx.PRODUCTS):
            return []  # "I live in Figma all day", "I basically live in DuckDB", "… in Metabase for anything visual": a
            # tool, not a place
        moved = re.search(r"\bfrom\s+(\S+)", clause[:match.start("v")], re.I)
        if moved and {moved.group(1).casefold(), place.split()[0].casefold()} & lx.COMMON_CAPS:
            return []  # "I moved from Flask to FastAPI": tools, not places
        said = clause[:match.start("v")] + place
        out = [Statement(finish(third_person(said)), "identity", keyword(place), "location")]
        zone = _ZONE_NEXT_RE.match(value[len(place):])  # "based in Pune (IST)", "in Nairobi so it's UTC+3 for me"
        if zone:
            out.append(Statement(finish(f"The user's timezone is {zone.group('z')}"), "personal", zone.group("z"),
                                 "timezone"))
        return out
    match = _EMPLOYER_RE.match(clause)
    if match and _looks_like_org(match.group("v")):
        value, comma, after = match.group("v").partition(", ")
        more = _appositive(after) if comma else []  # "… working for Hallberg Energi, based out of Gothenburg"
        if not more:
            value = match.group("v")
        value, roles = _as_role(value)
        roles += more
        if re.match(rf"^{_I}(?:'ve| have)?\s+(?:left|quit)\b", clause):
            value = _EMPLOYER_END_RE.split(value, maxsplit=1)[0]
            return [_works_at(value, "now "), *roles]
        said = third_person(clause[:match.start("v")] + value)
        if re.match(rf"{_IM}\s+(?:now\s+)?(?:at|with)\s", clause, re.I):  # "I'm at Globex now": works there
            value, place = _EMPLOYER_END_RE.split(value, maxsplit=1)[0], _place_in(value)
            return [_works_at(value), *roles, *place]
        return [Statement(finish(said), "identity", keyword(value), "employer"), *roles]
    match = _ROLE_RE.match(clause)
    if match:
        said_v = re.split(rf",?\s+(?:so|because|but|since|which means)\s+|{_OTHER_TIME}", match.group("v"))[0]  # (a reason
        # after; what the person does the rest of the time)
        parts = re.split(r"\s*,\s*(?:and\s+)?", said_v)
        value, appositives = parts[0], parts[1:]
        head = re.split(r"\s+(?:at|for|with|on|in|of|who|and|but|so|because)\s+", value)[0]
        field = re.match(rf"{_I}{_ADV}\s+do\s", clause) and re.search(
            rf"\b{WORK_FIELD}$", head, re.I)  # "I do data engineering at …": a field of work
        acronym = re.fullmatch(r"(?-i:[A-Z]{2,5})", head) and re.search(rf"^{_IM}\s+an?\s+$", clause[:match.start("v")])
        # ("I'm an SDET on the payments team", "I'm a BCBA in Ohio": a job said by its letters)
        if (lx.ROLE_RE.search(head) or field or acronym) and len(head.split()) <= 6 and not re.match(
                r"(?:bit|little|lot|fan|big fan|huge fan|stickler|sucker|night owl|morning person|"
                r"people person|cat person|dog person)\b", value, re.I):
            bare = _BARE_PLACE_RE.fullmatch(appositives[0]) if appositives else None
            if bare and re.search(r"\s(?:at|in)\s", value):
                # "developer in Infosys, Bangalore", "nurse at St Mary's, London": where they work, then where that is
                value = re.sub(r"\s+in\s+(?=(?-i:[A-Z])[^\s,]*(?:\s+(?-i:[A-Z])[^\s,]*){0,2}$)", " at ", value)
                appositives[0] = f"based in {bare.group('p')}"
            role, employer = _job_parts(value)
            place = _place_in(value)
            role = _without_place(role, place)  # "a nurse in Leeds", "a developer based in Recife": the place is its own record
            on_team = re.search(r"\s+(?:on|in) the (?P<t>(?:[\w&/+-]+\s+){1,3}team)\b", role, re.I)
            role = role[:on_team.start()] + role[on_team.end():] if on_team else role  # (the team is a record of its own)
            on_team = on_team or re.search(r"\s+on the (?P<t>(?:[\w&/+-]+\s+){1,3}team)\b", value, re.I)  # (after the
            # employer: "frontend dev at Tessera on the design systems team")
            unsaid = re.fullmatch(rf"{_IM}\s+", clause[:match.start("v")]) and role[:1].islower()  # (no article)
            said = clause[:match.start("v")] + (_article(role) if unsaid else "") + role  # ("i am accounts clerk")
            out = [Statement(finish(third_person(said)), "identity", keyword(role), "role")]
            if employer:  # (a student studies there: "PhD student at TU Delft")
                out.append(_works_at(employer, studies=bool(re.search(
                    r"\b(?:student|phd|undergrad|undergraduate|master's|masters|msc|bsc)\b", role, re.I))))
            if on_team:
                out.append(Statement(finish(f"The user is on the {on_team.group('t')}"), "identity", on_team.group("t"),
                                     "team"))
            out.extend(place)
            for part in appositives:
                if employer and re.match(r"an?\s", part, re.I) and (not lx.ROLE_RE.search(part) or _HEADCOUNT_RE.search(part)):
                    out.append(Statement(finish(f"{employer} is {part}"), "fact", keyword(employer), subject=employer))
                    continue  # "… at Quillon Bio, a 40-person biotech", "…, a 12-person publisher": what the employer is
                out.extend(_appositive(part))
            return out
    match = _BUSINESS_RE.match(clause) or _TEACH_RE.match(clause)
    if match:  # "I co-own a coffee roastery in Lagos", "I teach CS at a gymnasium": what the person does for a living
        value = re.split(r"\s+and\s+(?=(?:I\s+|i\s+)?(?:use|need|want|love|like|would|do|also)\b)", match.group("v"))[0]
        return _work_records(clause[:match.start("v")], value)
    return []


def _work_records(said: str, work: str) -> list[Statement]:
    """What the person does for a living (``said`` before ``work``: "I co-own "), and where, as records of their own:
    the place it ends with ("… in Marseille") and the employer it names ("year 5 at Greenfield Primary")."""
    place = _place_in(work)
    role, employer = _job_parts(_without_place(work, place))
    return [Statement(finish(third_person(said + role)), "identity", keyword(role), "role"),
            *([_works_at(employer)] if employer else []), *place]


# a business the person owns or runs, or a side or department of one
_BUSINESS_RE = re.compile(
    rf"^{_I}{_ADV}\s+(?:co-?own|own|co-?run|run|manage)\s+(?P<v>(?:(?:a|an|the|my|our|two|three|\d+)\s+)?"
    r"(?:[\w'’&-]+\s+){0,4}?(?:shop|store|business|company|agency|studio|bakery|caf[eé]|coffee shop|clinic|practice|"
    r"restaurant|firm|startup|start-up|roastery|farm|salon|consultancy|charity|nursery|gym|pub|hotel|b&b|brewery|"
    r"bookshop|boutique|food truck|stall|workshop|garage|pharmacy|side|department)\b.*)$", re.I)
# a subject the person teaches at a school ("I teach year 5 at Greenfield Primary", "… at a gymnasium in Aarhus")
_TEACH_RE = re.compile(
    rf"^{_I}{_ADV}\s+(?:teach|lecture)\s+(?P<v>(?!(?:my|our|the|a|an|them|him|her|it|this|that|you)\b)"
    r"[\w'’&-]+(?:\s+[\w'’&-]+){0,5}?\s+(?:at|in)\s+(?:a|an|the)?\s*(?:[\w'’-]+\s+){0,3}?(?:school|gymnasium|"
    r"college|university|uni|academy|institute|polytechnic|sixth form|high school|primary|secondary|"
    r"(?-i:[A-Z])[\w'’-]+).*)$", re.I)


def _article(role: str) -> str:
    """The article a job title said without one takes ("" when it has one): "an SRE", "an MLE" (an acronym said
    letter by letter), "a payroll specialist"."""
    if re.match(r"(?:an?|the|head of|their|his|her|our|my)\s", role, re.I):  # ("… as their clinical lead")
        return ""
    return "an " if role[:1].lower() in "aeiou" or re.match(r"[FHLMNRSX][A-Z]+\b", role) else "a "


def _work_said(clause: str) -> list[Statement]:
    """What the person does, said in their own words after their name ("I'm Hana, I do partner marketing", "I run
    events for a mid-size fintech in Lagos") when the corpus-trained classifier reads it as who they are: the work,
    and where it is (an employer, a place) as records of their own."""
    if not re.match(rf"{_I}\s", clause) or learned.likely_kind(clause) != "identity":
        return []  # (what "we" do is not the person's job: "…, we are in São Paulo")
    work = re.split(rf"{_OTHER_TIME}|,\s*who\b", clause, maxsplit=1)[0]  # ("… at Oakridge
    # Middle and the rest of the time I'm looking after my mam, who lives in Galway": the mam's place, not the job's)
    if re.search(rf"\bcare\s+for\s+my\s+(?:\w+\s+)?(?:{lx.FAMILY})\b", work, re.I):
        return []  # caring for family is no job ("I care for my dad in Cork"; but "I manage the farm of my family" is)
    return _work_records("", work)


def _appositive(part: str) -> list[Statement]:
    """What a phrase after a name says ("staff engineer at Brightwell", "based in Lagos", "from the infra team")."""
    part = part.strip(" .")
    topic = re.match(r"(?:(?P<how>mostly|usually|mainly|primarily)\s+)?working\s+on\s+(?P<x>.+)$", part, re.I)
    if topic:  # "PhD student at KTH, working on graph neural nets for protein folding": what the person works on
        how = f"{topic.group('how').lower()} " if topic.group("how") else ""
        return [Statement(finish(f"The user {how}works on {topic.group('x')}"), "identity", keyword(topic.group("x")))]
    place = re.match(r"(?:mostly|usually|mainly|primarily)\s+(?:out of|from|in)\s+(?=[A-Z])", part)
    if place:  # "…, mostly out of Ghent": where the person works from
        return _identity(f"I'm based in {part[place.end():]}")
    if re.match(r"(?:mostly|usually|mainly|primarily)\s", part, re.I):
        return _mostly(part)  # "i'm Tomasz, backend dev at Fernwood, mostly kotlin these days"
    working = re.match(r"(?:working|coding|writing)\s+(?P<how>mostly|mainly|primarily|usually)?\s*(?:with|in)\s+(?P<x>.+)$",
                       part, re.I)
    if working:  # "… at Zalando, working mostly with Kotlin and Spring"
        return _mostly(f"{working.group('how') or 'mostly'} with {working.group('x')}")
    if re.match(r"(?:live|work|teach|study)\s+(?:in|at|for|from)\s", part, re.I):
        part = f"I {part}"  # "Tomasz, retired, live in gdansk now": what the person says of themself, "I" left out
    if re.match(rf"(?:{_IM}|{_I})\s", part):
        return _identity(part) or _work_said(part)  # "Iñaki here, I'm the QA lead at Norte Games" ("a" + "I'm …"
        # once garbled it); "Ana here, I run events in Lagos"
    part = re.sub(r"^(?:(?:still|now)\s+)?(?:(?:working|work)\s+)?as\s+", "", part, flags=re.I)  # "Myself Ravi, working
    # as Java developer …", "I'm now at Quayside Labs, still as a staff engineer"
    if not part or len(part.split()) > 12 or re.match(r"(?:not|no longer|never|rather than)\b", part, re.I):
        return []  # "a designer, not a developer": what the person is not
    retired_as = re.match(r"retired\s", part, re.I) and lx.ROLE_RE.search(part)  # ("Tomasz, retired chemistry
    # teacher": the job the person is known by, as "I'm a retired GP" is read; "retired, two grandkids" is personal)
    personal = _personal(f"I'm {part}") if not re.match(r"\d+\s", part) and not retired_as else []
    if personal:  # "I'm Fatima, mum of three, …" ("Ravi, 34, …" is an age; "5 of us", "3 years in" are not)
        return personal
    team = re.match(r"(?:from|on|in|with|joining)\s+(?:the\s+)?(?P<v>.+?\b(?:team|squad|group))\b", part, re.I)
    if team and not re.fullmatch(r"(?:the\s+)?team", team.group("v"), re.I):  # ("Jo K with the
        # team": whose team, unsaid)
        return [Statement(finish(f"The user is on the {team.group('v')}"), "identity", keyword(team.group("v")),
                          "team")]
    if re.match(r"(?:based|living|located)\s+(?:in|out of)\b|(?:originally\s+)?from\s+[A-Z]", part):
        return _identity(f"I'm {part}")
    if re.match(r"(?:still\s+|now\s+)?(?:at|with)\s+[A-Z]", part):
        return _identity("I work " + re.sub(r"^(?:still|now)\s+", "", part))
    head = re.split(r"\s+(?:at|for|with|on|in)\s+", part)[0]
    if lx.ROLE_RE.search(head) and not re.match(r"(?:and|but|so|who|which|can|could|please|about|around|roughly|"
                                                r"over|nearly|almost|some)\b|~|\d+\s", part, re.I):
        return _identity(f"I'm {_article(part)}{part}")  # ("…, about 40 students": how many, not what the person is)
    return []


def _possessive(text: str) -> str:
    """ "Tamil is my first language" → "Tamil is the user's first language" (a first person not at the start)."""
    if text.startswith("The user"):  # "The user wants blunt feedback on my code" → "… on their code"
        return "The user" + re.sub(r"\bme\b", "them", re.sub(r"\bmy\b", "their", text[8:]))
    return re.sub(r"\bme\b", "the user", re.sub(r"\bmy\b", "the user's", text, flags=re.I))


def _looks_like_org(value: str) -> bool:
    first = value.split()[0].strip(",.") if value.split() else ""
    return bool(first) and first.casefold() not in (
        "the", "this", "that", "it", "home", "night", "nights", "weekends", "work", "my", "your", "our", "least",
        "all", "some", "times", "first", "once", "scale", "random", "large", "speed", "length", "best", "most")


# -- personal -------------------------------------------------------------------------
# what a person is that food, health or the body decides ("I'm vegetarian", "Lucia is allergic to nuts")
_TRAITS = (r"vegetarian|vegan|pescatarian|gluten[- ]free|lactose[- ]intolerant|diabetic|celiac|coeliac|colou?r[- ]?blind|"
           r"dyslexic|left[- ]handed|allergic")
_PERSONAL_RE = re.compile(
    rf"^(?:(?:my|our(?!\s+lab\b))\s+(?:(?:little|older|younger|big|baby|two|three|\w+-year-old)\s+)*(?:{lx.FAMILY})\b|"
    rf"{_IM}{_ADV}\s+(?:a\s+|an\s+)?(?:(?:strict|lifelong|proud|new|first-time|single|big|huge|type\s+[12i]+|red[- ]green|partially)\s+)?"
    rf"(?:{_TRAITS}|right[- ]handed|(?:not\s+)?a morning person|morning person|a night owl|night owl|an early bird|"
    r"muslim|christian|jewish|hindu|buddhist|sikh|catholic|atheist|mormon|"
    r"married|engaged|divorced|single|pregnant|expecting|retired|deaf|hard of hearing|blind|autistic|"
    r"a (?:dad|mom|mum|father|mother|parent)|(?:dad|mom|mum|father|mother|parent) of|teetotal|sober|"
    r"an? (?:runner|cyclist|climber|swimmer|gamer|musician|guitarist|pianist|drummer|photographer|baker|"
    r"cook|reader|hiker|skier|surfer|gardener|knitter|chess player|marathoner|triathlete|birder)|"
    r"(?:\d{1,2}|in my (?:twenties|thirties|forties|fifties|sixties|20s|30s|40s|50s|60s))\b)|"
    rf"{_I}{_ADV}\s+(?:have|'ve got|got)\s+(?:a|an|two|three|four|\d+)\s+(?:[\w-]+\s+){{0,3}}(?:{lx.FAMILY})\b|"
    rf"{_I}(?:'ve| have)\s+(?:type\s+[12]\s+diabetes|adhd|asthma|diabetes|rsi|migraines|celiac|a bad back|tinnitus|dyslexia|"
    r"bad eyesight|allerg)|"
    rf"{_I}{_ADV}\s+(?:don't|do not|can't|cannot)\s+(?:eat|drink|have)\s+|"
    rf"{_I}{_ADV}\s+live\s+with\s+(?:my|our)\s+(?:{lx.FAMILY})\b|"
    rf"(?:{_I}|we){_ADV}\s+(?:just\s+)?adopted\s+(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{lx.FAMILY})\b|"
    rf"{_I}(?:'ve| have)\s+been\s+(?:a\s+)?(?:{_TRAITS})\b|"
    rf"{_I}{_ADV}\s+tend\s+to\s+(?:work|sleep)\b|"  # (the hours the person keeps)
    rf"{_I}{_ADV}\s+get\s+migraines\b|"
    rf"{_I}{_ADV}\s+(?:play|run|climb|cycle|bike|swim|surf|hike|bake|cook|paint|knit|garden|sing|dance|"
    r"skate|ski|snowboard|row|box|fence|sail|fish|volunteer|meditate|practice|practise|train|coach|"
    r"collect|brew|homebrew|woodwork|read|draw|write (?:poetry|fiction|novels)|commute)\b|"
    r"my (?:birthday|bday|hobby|hobbies|diet|allergy|allergies|time ?zone|tz|weekends?|evenings|"
    r"partner's|wife's|husband's|kids'|kid's|son's|daughter's)\b|"
    rf"{_I} was born\b|{_IM}\s+on\s+(?-i:[A-Z]\w+)\s+time\b|(?:we|I|i)(?:'ve| have)?\s+(?:got\s+)?(?:(?:a|an|two|three|four|\d+)\s+"
    rf"(?:\w+\s+){{0,2}}(?:{lx.FAMILY})|twins\b)\b|{_I}{_ADV}\s+grew up\b|{_IM}\s+(?:born and raised|raised)\b|{_IM}\s+(?:on|in)\s+(?:(?-i:[A-Z]{{2,5}}T?|[A-Z][a-z]+/[A-Z][a-z_]+)|UTC|GMT)(?:\s*[+-]\s*\d{{1,2}}(?::\d{{2}})?)?\b|"
    rf"{_IM}\s+(?:\w+\s+)?(?:hours?|hrs?)\s+(?:ahead|behind)|{_I}{_ADV}\s+(?:don't|do not)\s+(?:work|check slack|"
    r"answer)\s+(?:on\s+)?(?:weekends|fridays|evenings)|"
    rf"{_I}{_ADV}\s+(?:speak|am learning|'m learning|learn)\s+|{_IM}\s+learning\s+|{_IM}\s+(?:really\s+)?into\s+|"
    rf"{_I}(?:'ve| have) been (?:playing|running|climbing|learning|doing)\b(?!\s+(?:this|that|it)\b)|"
    rf"{_IM}\s+(?:training for|recovering from|fasting|on a (?:[\w-]+\s+)?diet|on keto|doing keto)\b|"
    rf"{_IM}\s+(?:still\s+|also\s+)?on\s+(?=(?:[\w-]+\s+){{0,2}}?(?:{lx.MEDICATIONS})(?:$|[^\w\s]|\s+(?:for|since|"
    r"twice|every|and|so)\b)))",  # ("I'm on warfarin", not "I'm on the meds rota")
    re.I,
)
# a time zone itself: "UTC+3", "GMT-5", "EAT", "AEST/AEDT", "Europe/Lisbon"
_ZONE_RE = re.compile(r"\b(?:UTC|GMT)\s?[+-−]\s?\d{1,2}(?::?\d{2})?\b|\b(?:UTC|GMT)\b|(?<![\w/])(?-i:[A-Z]{1,3}[SD]?T)(?:/(?-i:[A-Z]{2,4}T))?\b"
                      r"(?:\s*\((?:UTC|GMT)\s?[+-−]\s?\d{1,2}(?::?\d{2})?\))?"
                      r"|\b[A-Z][a-z]+/[A-Z][a-z_]+\b")
# the time zone right after a place ("Pune (IST)", "Nairobi, so I'm on EAT", "Lagos so it's WAT for me")
_ZONE_NEXT_RE = re.compile(r"\s*[(,;—–-]?\s*(?:so\s+)?(?:(?:I'm|I’m|im|i am|it's|it is|we're)\s+(?:on\s+|in\s+)?)?"
                           rf"(?P<z>{_ZONE_RE.pattern})", re.I)
# a time zone said as the person's own: "I'm on EAT, UTC+3 …", "I'm in PST"
_OWN_ZONE_RE = re.compile(rf"(?:I'm|I’m|im|i am)\s+(?:on|in)\s+(?P<z>{_ZONE_RE.pattern})", re.I)
_TIMEZONE_RE = re.compile(r"\b(?:time ?zone|tz|utc|gmt|(?-i:[A-Z]{2,4}T)\b|[A-Z][a-z]+/[A-Z][a-z_]+|hours? (?:ahead|behind))",
                          re.I)


# a long leave the person will take ("I'll be on parental leave most of Q4", "… on leave from March 1 to April 15"):
# the agent should know; a day or a week off is the moment's
_LEAVE_RE = re.compile(
    rf"^(?:{_I}(?:'ll|’ll| will)\s+be|{_IM})\s+(?:on|taking|off on)\s+(?:(?:parental|maternity|paternity|sick|medical|"
    rf"long|extended|study|unpaid|sabbatical)\s+)?leave\b(?=.*\b(?:{lx.MONTHS}|Q[1-4]|\d+\s+(?:weeks|months)|the summer|the rest of the year)\b)",
    re.I)


def _personal(clause: str) -> list[Statement]:
    match = _PERSONAL_RE.match(clause)
    if not match or re.fullmatch(rf"my\s+(?:\w+\s+)?(?:{lx.FAMILY})", clause.strip(), re.I):
        return []  # ("My partner and I have two cats": "My partner" alone says nothing)
    named = re.fullmatch(rf"(?:my|our)\s+(?P<k>(?:\w+\s+)?(?:{lx.FAMILY})),?\s+(?P<n>(?-i:[A-Z][\w'’-]+))", clause.strip(),
                         re.I)
    if named:  # "…, my husband Tom and …": who they are
        return [Statement(f"The user's {named.group('k')} is {named.group('n')}.", "personal", named.group("n"))]
    ages = re.fullmatch(rf"our\s+(?P<k>(?:\w+\s+){{0,2}}(?:{lx.FAMILY})),?\s+(?P<a>\d{{1,2}}(?:,?\s+(?:and\s+)?\d{{1,2}})*)",
                        clause.strip(), re.I)
    if ages:  # "our two boys, 7 and 10"
        return [Statement(f"The user has {ages.group('k')}, aged {ages.group('a')}.", "personal", ages.group("k"))]
    if re.match(rf"^{_I}{_ADV}\s+(?:speak)\b", clause, re.I):
        return []  # languages are identity
    hobby = re.match(rf"^{_I}{_ADV}\s+(?:run|read|write|train|coach|practice|practise|play)\b", clause, re.I)
    if hobby and not re.search(
            r"\b(?:marathons?|\d+k|races?|ultras?|free time|spare time|"
            r"for fun|hobby|guitar|piano|violin|drums|bass|chess|football|soccer|tennis|basketball|"
            r"volleyball|golf|cricket|rugby|hockey|badminton|squash|board games|video games|games|d&d|"
            r"poetry|fiction|novels|books|sci-fi|fantasy|club|league|band|choir|orchestra|"
            r"\w*marathons?|triathlons?|ironmans?)\b",
            clause, re.I) and not re.match(r"\s+(?:(?:on|at|in)\s+(?:the\s+)?)?(?:every|each|daily|weekly|weekends?|mornings?|"
                                           r"evenings?)\b", clause[hobby.end():], re.I):
        return []  # "I run the data team", "I read the logs", "I run payroll every month" are not hobbies (but "I run
        # every morning" is)
    slot = "timezone" if _TIMEZONE_RE.search(clause) and re.search(r"time ?zone|\btz\b|UTC|GMT|[A-Z]{2,4}T\b|"
                                                                    r"hours? (?:ahead|behind)|\b[A-Z][a-z]+/[A-Z][a-z_]+\b",
                                                                    clause) else None  # ("Europe/Lisbon": a zone's name)
    own = _OWN_ZONE_RE.match(clause) if slot else None
    if own:  # "I'm on EAT, UTC+3, if you see odd times in my logs": the zone, not the rest
        return [Statement(finish(f"The user's timezone is {own.group('z')}"), "personal", own.group("z"), slot)]
    return [Statement(finish(third_person(clause)), "personal", keyword(clause[match.end():] or clause), slot)]


# -- people ------------------------------------------------------------------------------
# "my manager is great", "our accountant is so slow": a word on someone unnamed, no record
# what the person thinks of what they just said ("…, which I hate but whatever", "…, which I love")
_WHICH_I_RE = re.compile(rf",?\s+which\s+{_I}{_ADV}\s+(?P<v>love|hate|can't stand)\b.*$", re.I)
_A_WORD_ON_RE = re.compile(rf"^(?:my|our)\s+(?:[\w-]+\s+){{1,2}}?(?:is|are)\s+(?:(?:so|really)\s+)?"
                           rf"(?!(?:{_TRAITS})\b)(?-i:[a-z][\w-]*)\W*$", re.I)  # (but "my co-organiser Yuki is coeliac")
_COLLEAGUE_RE = re.compile(rf"^(?:my|our)\s+(?:new\s+|old\s+|former\s+|current\s+)?(?P<role>(?:[\w-]+\s+)?"
                           rf"(?:{lx.COLLEAGUES}|(?!(?:backend|frontend|admin|editor|platform|infra|ops|support|sales|"
                           rf"marketing|full-?stack|dev|devops|qa|owner|head|contact)\b)(?:{lx.ROLE_NOUNS})(?:(?<=\w{{4}})s)?))\b(?:,?\s+(?P<n>(?-i:(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?"
                           rf"[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)),?)?", re.I)
_PERSON_VERB_RE = re.compile(
    r"^(?:,?\s*(?:(?:who|and)\s+)?)?(?:also\s+|now\s+|still\s+|usually\s+|basically\s+|actually\s+|mostly\s+|just\s+|"
    r"officially\s+|normally\s+|generally\s+|typically\s+|always\s+|mainly\s+|only\s+)?(?P<verb>is (?:handling|running|leading|driving|organi[sz]ing|doing all)|can (?:approve|sign off|"
    r"merge|grant|unlock)|sets|controls|books|chases|deals with|validates|has (?:a )?veto|has (?:the )?final (?:say|word|call)|has (?:the )?last word|"
    r"left (?:the company|the team|us|the org|the firm)|quit|retired|owns|co-?owns|own|leads|lead|manages|manage|runs|run|handles|handle|maintains|"
    r"maintain|decides|decide|approves|approve|signs off|sign off|reviews|review|is in charge of|are in charge of|"
    r"is responsible for|are responsible for|takes care of|take care of|looks after|look after|knows|built|wrote|"
    r"designed|set up|sets up|reports to|works on|work on|works with|joined|started as|covers|cover|prefers|prefer|likes|"
    r"hates|wants|schedules|organi[sz]es|is based in|lives in|works from|works at|works in|works for|sits in|"
    r"speaks|is from|drives|champions|will own|will lead|took over|has taken over|is taking over|assigns|"
    r"triages|mentors|coordinates|merges|deploys|cuts|is|are|has|does|do|must|needs|should|writes|pays|hired|"
    r"onboards|onboarded|answers|fields|is on|are on|is off|signs|gets|gives|sends|makes|pair|pairs|"
    r"collaborates|work together|needs|wants|teaches|translates)\b",
    re.I,
)
_PERSON_IS_RE = re.compile(rf"^(?:is|are)\s+(?:also\s+|now\s+)?(?:(?:our|my|the|a|an|their|his|her)\s+)?"
                           rf"(?:(?:new|main|only|lead|senior|junior|staff|principal|head|de facto|acting|"
                           rf"interim|go-to|(?!for\b)[\w-]+)\s+){{0,3}}"
                           rf"(?:{lx.ROLE_NOUNS})s?\b|^(?:is|are)\s+(?:on|in)\s+"
                           rf"(?:the\s+)?(?:[\w-]+\s+){{0,3}}(?:team|squad|group)\b|^(?:is|are)\s+(?:based|from|remote)\b|"
                           rf"^is\s+in\s+(?-i:[A-Z])|"  # (where a person is: "Chen is remote in Taipei", "… is in Lagos")
                           rf"^is\s+the\s+(?:only\s+)?(?:one|person)\b|^(?:is|are)\s+(?:responsible|in charge)\b|"
                           rf"^(?:is|are)\s+(?:{_TRAITS})\b|"
                           rf"^(?:is|are)\s+on\s+(?:[\w-]+\s+)?leave\s+until\b",
                           re.I)


# whom the person reports to ("I report to Farid (VP Eng)")
_REPORTS_TO_RE = re.compile(rf"^{_I}{_ADV}\s+report\s+to\s+(?P<n>(?-i:[A-Z][\w'’-]+)(?:\s+(?-i:[A-Z][\w'’-]+))?)(?=\W|$)",
                            re.I)


def _people(clause: str) -> list[Statement]:
    clause = re.sub(r"^((?-i:[A-Z])[\w-]+)['’]s(?=\s+(?:the|our|in|on|from|based)\s)", r"\1 is", clause)  # "Priya's the
    # one who …", "Rania's in Berlin"
    clause = re.sub(r"^both\s+(?=(?-i:[A-Z]))", "", clause, flags=re.I)  # "Both Sofia and Mark can approve deploys"
    pair = re.match(r"^(?P<n>(?-i:[A-Z])[\w'’-]+) and (?:I|i)\s+(?P<v>(?:split|share)\b.*)", clause)
    if pair and _is_name_word(pair.group("n")):  # "Luis and I split the on-call"
        return [Statement(finish(f"{pair.group('n')} and the user {about_user(pair.group('v'))}"), "people",
                          pair.group("n"), subject=pair.group("n"))]
    reports = _REPORTS_TO_RE.match(clause)
    if reports:
        return [Statement(finish(third_person(clause)), "people", reports.group("n"), subject=reports.group("n"))]
    if re.search(r"(?<!\bwhen )(?<!\bif )(?<!\bwhenever )\b(?-i:(?!IT\b))(?:this|these|those|it)\b(?!\s+(?:team|company|"
                 r"project|service|repo|days)\b)", clause.split(",")[0],
                 re.I) \
            and not re.search(r"\b(?:always|every|any|all)\b", clause, re.I):
        return []  # "my boss wants this done by Friday" is about the task at hand
    colleague = _COLLEAGUE_RE.match(clause)
    if colleague:
        rest = clause[colleague.end():].strip(" ,")
        name = colleague.group("n")
        if _A_WORD_ON_RE.match(clause):
            return []
        if name or _PERSON_VERB_RE.match(rest):
            named = re.match(r"(?:is|'s)\s+(?P<n>(?:(?:Dr|Prof|Mr|Mrs|Ms)\.?\s+)?(?-i:[A-Z][\w'’-]+)(?:\s+(?-i:[A-Z][\w'’-]+))?)"
                             r"(?:\s+(?:from|at)\s+(?-i:[A-Z])[\w&'’-]*(?:\s+(?-i:[A-Z])[\w&'’-]*){0,3})?"
                             r"(?:\W*$|(?:,|\s+and)\s*(?:he|she|they)\b)", rest)  # ("… is Mr. Ramesh Iyer, he approves all PRs",
            # "our accountant is Graham from Bright Tax", "… is Giulia Rossi at ETH")
            subject = name or (named.group("n") if named else colleague.group(0))  # ("my manager is Yuki": Yuki)
            return [Statement(finish(third_person(clause)), "people", keyword(subject), subject=subject)]
    owned = re.match(r"^(?P<n>(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?))['’]s\s+(?:team|squad|group|org)\s+"
                     r"(?:owns|runs|handles|maintains|manages|builds|is responsible for)\b", clause)
    if owned and _is_name_word(owned.group("n").split()[0]):
        return [Statement(finish(clause), "people", owned.group("n"), subject=owned.group("n"))]
    name = subject_person(clause)
    if name is None:
        return []
    rest = clause[len(name):].strip()
    if re.match(r"(?-i:[a-z])[\w-]*\s+is\b", rest):
        return []  # "School run is 8:15": the capital starts a thing's name, not a person's
    rest = re.sub(r"^(?:and\s+[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?|\([^)]*\)|,\s*(?:our|my|the)\s+[\w\s-]{1,30},|"
                  r"(?:from|at)\s+(?-i:[A-Z])[\w&'’-]*(?:\s+(?-i:[A-Z])[\w&'’-]*){0,3}(?=\s)|"  # ("Kofi from Accra
                  # Rotary is our contact", "Lena at Northwind is our account manager")
                  r"(?:from|in|on)\s+(?:the\s+)?[\w-]+(?:\s+team)?(?=\s))\s*",
                  "", rest).strip()
    verb = _PERSON_VERB_RE.match(rest)
    if not verb:  # (but what a person set apart by their role does is said of them: "Bongani, our bookkeeper, closes …")
        apposed = re.match(rf"\s*,\s*(?:our|my|the)\s+(?:[\w-]+\s+){{0,2}}?(?:{lx.ROLE_NOUNS}),", clause[len(name):], re.I)
        return [Statement(finish(third_person(clause)), "people", name, subject=name)] \
            if apposed and re.match(r"(?-i:[a-z]+[^s\W]s)\s+\w+\s+\w", rest) else []  # (not "… loves it")
    if verb.group("verb").casefold() in ("is", "are", "has", "does", "do", "must", "needs", "should", "gets",
                                          "gives", "sends", "makes", "is on", "are on", "is off", "runs", "run"):
        tail = rest[verb.start("verb"):]
        strong = bool(_PERSON_IS_RE.match(tail)) or bool(re.match(
            r"^(?:runs|run)\s+(?:the\s+|our\s+)?(?:[\w-]+\s+){0,3}(?:team|standup|stand-up|meeting|retro|"
            r"release|releases|on-?call|show|process|interviews?|hiring|sprint|planning|demo|sync|"
            r"1:1s?|one-on-ones)\b|^(?:must|needs to|should|has to|gets to|does)\s+(?:approve|sign|review|"
            r"decide|own|okay|ok|greenlight|the releases?|the reviews?|all)\b|^(?:is|are) (?:off|out) (?:on )?"
            r"(?:fridays|mondays|weekends)\b|^does\s+(?:(?:our|the|all)\s+)?(?:(?-i:[A-Z]{2,5})\b|(?:design|"
            r"testing|reviews|hiring|payroll|accounting|the books|books|support|ops|infra|security|releases|on-?call|"
            r"translations?|copy|marketing|editing|year-end|accounts|tax returns|rota|invoicing|onboarding|bookkeeping|scheduling)\b|"
            r"(?:(?:all|most)\s+(?:of\s+)?)?(?:(?:our|the|their)\s+)?(?!(?:that|an|nothing|everything|something|so|not|"
            r"too|well|some|what|whatever|stuff|things|lots)\b)[a-z][\w-]+)|^(?:runs|run)\s+(?!(?:on|in|at|every|each|daily|nightly|weekly|hourly|"
            r"as|under|inside|behind|against|with|through|from|off|out|late|fast|slow|smoothly|fine|ok|okay|it|that|"
            r"this|things|the show|away|into|over|up|down|low|hot|out)\b|(?:the\s+|our\s+)?(?:[\w-]+\s+)?(?:builds?|jobs?|"
            r"tests|test suite|suite|crons?|backups?|migrations?|scripts?|checks|containers?|workers?|queries)\b)[\w`-]",
            tail, re.I))
        # ("Ines runs growth" is who owns what; "Orbit runs on k8s" is a system)
        if not strong and verb.group("verb").casefold() in ("is", "are"):
            predicate = tail[len(verb.group("verb")):]
            strong = bool(re.match(rf"\s+(?:also\s+)?(?:our|the|my|their)\s+(?:only\s+)?(?:one|person)\s+(?:who|to)\b|"
                              rf"\s+(?:also\s+)?(?:our|the|my|their)\s+(?:[\w-]+\s+){{0,3}}(?:(?-i:[A-Z]{{2,5}})|"
                              rf"{lx.ROLE_NOUNS}|champion|advisor|adviser|lead|owner|contact|expert|person|go-to)\b",
                              predicate, re.I)) and not lx.THING_RE.search(predicate.split(" who ")[0])
        if not strong:
            return []
    return [Statement(finish(third_person(clause)), "people", name, subject=name)]


def subject_person(clause: str) -> str | None:
    """The person a clause opens on ("Trent is my colleague …": Trent), not a thing named like one ("Postgres …")."""
    name = leading_name(clause, 2)
    if name is None:
        return None
    first = name.split()[0]
    if lx.THING_RE.fullmatch(first) or first.endswith(("js", "DB", "db", "ql", "QL", "API")):
        return None
    return name


def _who(statement: Statement) -> str | None:
    """Whom a people statement is about, for a "he"/"she" after it: the name it ends on where its subject is a role
    ("My supervisor now is Oluwaseun Adeyemi. He's strict …": Oluwaseun Adeyemi, not "my supervisor")."""
    end = _IS_NAME_END_RE.search(statement.text.rstrip("."))
    if end and (statement.subject is None or re.match(r"(?:my|our|the|their|his|her)\b", statement.subject, re.I)):
        return end.group("n")
    return statement.subject


def _asked_person(request: str) -> str | None:
    """Whom an instruction names ("Ask Chen about anything k8s", "Talk to Chen …": Chen, not "Ask Chen" or "Talk")."""
    words = request.split()
    name = next((name for i in range(1, len(words)) if (name := leading_name(" ".join(words[i:]), 2))), None)
    return re.sub(r"['’]s$", "", name) if name else None  # ("till Bongani's back": Bongani)


# -- preference ------------------------------------------------------------------------
_PREFERENCE_RE = re.compile(
    rf"^(?:{_I}{_ADV}\s+write\s+(?:everything|all\s+(?:[\w-]+\s+){{0,2}}?[\w-]+)\s+in\s+(?-i:[A-Z])|"  # ("… all client
    # emails in Dutch": the language or tool the person writes in)
    rf"{_I}{_ADV}\s+(?:prefer|like|love|enjoy|hate|dislike|detest|loathe|adore|appreciate|can't stand|"
    rf"cannot stand|can't bear|don't mind|despise|avoid)\b|"
    rf"{_I}{_ADV}\s+(?:don't|do not|dont)(?:{_ADV})\s+(?:like|want|enjoy|care for|need|love|use)\b|"
    rf"{_I}'?d (?:much |really |way |far )?(?:rather|prefer)\b|{_I}'?d (?:really )?(?:like|love)\s+(?!to\b|you to\b|it if\b|(?:some |your )?help\b)|"
    rf"(?:for me,?\s+)?[\w`.+#-]+(?:\s+[\w`.+#-]+)?\s+beats?\s+[\w`.+#-]+(?:\s+[\w`.+#-]+)?(?:\s+for me)?$|{_I} would (?:much |really )?(?:rather|prefer)\b|"
    rf"(?:(?:[\w`.+#-]+\s+){{1,3}}?(?:is|are)\s+)?my\s+(?:all-time\s+)?(?:favou?rite|go-to|preferred|default)\b(?!\s+person\b)|"
    rf"{_I}{_ADV}\s+tend\s+to\s+(?!forget\b)\w+|"
    rf"{_IM}\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|not\s+a\s+|no\s+)?(?:fan|stickler|sucker)\s+(?:of|for)\b|"
    rf"{_IM}\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\b|{_IM}\s+(?:really\s+|kind of\s+|kinda\s+)?(?:partial to|not (?:much |really )?into|more into|"
    rf"a (?:big |firm |strong )?believer in|more of an? \S+(?:\s+\S+)? (?:person|guy|gal|fan)|an? \S+(?:\s+\S+)? person\b)|"
    rf"{_I}{_ADV}\s+(?:tend to|usually|always|generally)\s+(?:prefer|use|go for|reach for|pick|choose|like|want)\b|"
    rf"{_I}{_ADV}\s+(?:lean|gravitate)\s+(?:towards?|to)\b|{_I}{_ADV}\s+(?:won't|will not|wouldn't)\s+touch\b|"
    rf"{_I}{_ADV}\s+want\s+.+\bin\s+everything\b|"
    rf"{_I}(?:'ve| have)\s+always\s+(?:liked|loved|preferred|hated|used)\b|{_I}{_ADV}\s+(?:really\s+)?dig\b|"
    rf"(?:\w+\s+){{1,4}}(?:annoys|bugs|bothers|irritates) me\b|(?:\w+\s+){{1,4}}(?:is|are) (?:a|my) pet peeve|"
    rf"{_IM}\s+(?:much\s+|way\s+|far\s+|a lot\s+|just\s+)?(?:more comfortable|happier|most comfortable|comfortable|"
    rf"at home)\s+(?:with|in|using|reading|writing)\b|{_IM}\s+(?:much\s+|way\s+|far\s+|a lot\s+)?happier\s+when\b|(?:[\w`.+#-]+\s+){{1,5}}(?:is|are)\s+(?:much\s+|way\s+|far\s+|a lot\s+)?"
    rf"(?:easier|simpler|clearer|nicer|more natural)\s+for me\b|"
    rf"my (?:biggest\s+)?pet peeve\b|(?-i:[A-Za-z][\w`.+#-]*)(?:\s+[\w`.+#-]+)?\s+(?:>|>>|≫)\s+[A-Za-z][\w`.+#-]*$|{_IM}\s+(?:really\s+)?big on\b|"
    rf"{_I}{_ADV}\s+(?:don't|do not)\s+care\s+(?:much\s+|too much\s+)?(?:about|for)\b|"
    rf"{_I}'?d{_ADV}\s+(?:pick|choose|take|go with)\s+.+\s+over\s+|{_I}'?d{_ADV}\s+(?:go with|pick|choose|reach for)\s+"
    rf".+\b(?:every time|any day|always|by default)$|nothing beats\b|"
    rf"(?:\w+\s+){{1,4}}(?:is|are) (?:a must|non-negotiable|essential|a dealbreaker|a deal-breaker) for me|{_I}{_ADV}\s+want\s+(?:short|shorter|long|longer|concise|terse|detailed|brief|"
    rf"simple|plain|direct|honest|blunt)\b|"
    rf"{_I}{_ADV}\s+(?:use|write|code|program|develop|work|live)(?:\s+{ADVERBS})?\s+(?:in|with)?\s*(?=(?-i:[A-Z`]))|"
    rf"{_I}{_ADV}\s+use\s+(?!(?:the|this|that|it|these|those|your|some|a lot|them)\b)[\w`.+#-]+(?:\s+(?:with|on|for)\b|$)|"
    rf"[\w`.+#-]+(?:\s+[\w`.+#-]+)?\s+over\s+[\w`.+#-]+(?:\s+[\w`.+#-]+)?\s+(?:for me|any day|every time)$|"
    rf"{_I}{_ADV}\s+(?:find|think)\s+(?:\S+\s+){{1,4}}(?:annoying|distracting|useless|unreadable|noisy|"
    rf"overkill|helpful|easier|clearer|cleaner|more readable|hard to (?:read|follow)|confusing|painful|useful|clunky|"
    rf"tedious|cumbersome|awkward|frustrating|verbose|unintuitive|intuitive|elegant|hard to use|ugly|unusable|exhausting|"
    rf"stressful)\b|"
    rf"{_I}{_ADV}\s+learn\s+(?:\w+\s+)?(?:better|best|faster|more)\b|"
    rf"{_I}{_ADV}\s+do\s+(?:everything|all (?:of )?my \w+|most (?:of )?my \w+)\s+(?:in|with|on)\s+|"
    rf"my (?:editor|ide|shell|terminal|os|browser|keyboard|setup|stack|language|distro|laptop) (?:of choice )?is\b|"
    rf"{_IM}\s+(?:a\s+)?(?:tabs|spaces|vim|emacs|light|dark)[- ]\w+\s+(?:person|guy|gal|kind of person)\b|"
    rf"(?:\w+\s+){{1,4}}(?:drives?|drive) me (?:nuts|crazy|mad|up the wall)|"
    rf"(?:\w+\s+){{1,3}}(?:is|are) my (?:jam|thing|favou?rite)|(?:\w+\s+){{1,4}}(?:works|work) best for me|"
    # "Python is my language of choice", "I've always been a Postgres guy", "I'm not big on comments",
    # "I'm happiest with small PRs", "I tend to write everything in TypeScript", "Emacs user here", "Light mode person"
    rf"[\w.+#/-]+(?:\s+[\w.+#/-]+)?\s+(?:is|are)\s+my\s+(?:\w+\s+){{0,2}}of choice\b|"
    rf"{_I}(?:'ve| have)\s+always\s+been\s+(?:an?\s+)?[\w.+#-]+(?:\s+[\w.+#-]+)?\s+(?:person|guy|gal|fan|user)\b|"
    rf"{_IM}\s+not\s+(?:very\s+|too\s+|that\s+)?big\s+on\b|{_IM}\s+happiest\s+(?:with|in|using|when)\b|"
    rf"{_I}{_ADV}\s+tend\s+to\s+(?:write|do|build|work)\s+(?:everything|most things|all (?:of )?my \w+)\s+(?:in|with)\b|"
    rf"(?-i:[A-Z])[\w.+#-]*(?:\s+[\w.+#-]+)?\s+(?:user|person|guy|gal|fan)(?:\s+here)?(?:,\s*(?:sorry|lol|haha|tbh))?$)",
    re.I,
)
_REACTION_RE = re.compile(r"^(?:it(?!\s+(?:when|if)\b)|that(?!\s+(?:we|you)\b)|this|them|those|these|how(?! you\b)|what|the way|your|where|"
                          r"to (?:see|know|try|check|ask|add|get|make|have|run|fix|look)|if)\b", re.I)
_PREF_VERB_RE = re.compile(rf"^{_I}{_ADV}\s+(?:\w+\s+){{0,2}}?(?:prefer|like|love|enjoy|hate|dislike|rather|"
                           r"stand|bear|mind|use|want|care for|need|fan|avoid|partial to|into|believer in|dig|"
                           r"go for|reach for|pick|choose|liked|loved|preferred|hated|used)\s+(?P<v>.*)$", re.I)


_WHAT_I_LIKE_RE = re.compile(rf"^(?:.*,\s*)?(?P<x>[^,]+?)\s+(?:is|are)\s+(?:what|the (?:thing|stuff))\s+{_I}\s+(?P<v>like|love|prefer|"
                             r"want|enjoy)(?P<rest>\s+(?:on|in|for|from)\s+.+)?$", re.I)
_BEST_FOR_ME_RE = re.compile(r"^(?P<x>.+?)\s+(?:is|are|works?|suits?|helps?)\s+(?:me\b|(?:\w+\s+)?(?:best|better|great|well)?\s*"
                             r"(?:for me|me (?:a lot|most|best)))|^(?P<y>(?:\w+\s+){0,3}\w+)\s+(?:helps|help|works? best)$",
                             re.I)


# "tabs over spaces, always", "composition over inheritance": one thing preferred to another, said as a motto
_OVER_RE = re.compile(r"^(?:give me\s+)?(?P<a>(?!(?:it|that|this|we|i|you|they|he|she|all|go|come|move|get)\b)(?![\w-]+ed\b)[\w.#+-]+"
                      r"(?:\s+[\w.#+-]+)?)"
                      r"\s+over\s+(?P<b>(?!(?:the|a|an|my|our|their|his|her|it|there|here|time|lunch|coffee|to|with|by|"
                      r"zoom|slack|email|text)\b)[\w.#+-]+(?:\s+[\w.#+-]+)?)"
                      r"(?:,?\s+(?:always|every time|any day|for me|please))?$", re.I)


# a taste said as a motto: "bullet points, always", "polars every time", "ISO dates or nothing", "give me sqlc or raw SQL
# any day" (a noun phrase, no verb: "the build fails every time" says what happens)
_MOTTO_RE = re.compile(r"^(?:give me\s+)?(?P<x>(?!(?:it|i|we|you|same|like)\b)"
                       r"[\w`.#+/-]+(?:\s+[\w`.#+/-]+){0,4}?),?\s+(?P<t>always|every time|any day|or nothing)"
                       r"(?:\s+(?:if|when|for)\s+.+)?$", re.I)
_MOTTO_VERB_RE = re.compile(r"\b(?:is|are|has|have|fails?|breaks?|happens?|works?|runs?|[a-z]+ed)\b", re.I)
# a liking with what is liked said first: "YAML anchors on the other hand I hate with a passion"
_FRONTED_RE = re.compile(rf"^(?P<o>[\w`.#+/'-]+(?:\s+[\w`.#+/'-]+){{0,4}}?),?\s+"
                         rf"(?:on the other hand,?\s+)?{_I}{_ADV}\s+(?P<v>hate|love|adore|loathe|can't stand)"
                         r"(?P<rest>\s+with a passion)?\W*$", re.I)
# a taste said as an idiom: "Makefiles are my happy place", "the oxford comma is a hill I will die on", "pie charts make
# me want to scream"
_TASTE_RE = re.compile(r"^(?!(?:it|that|this|you)\b)(?:[\w`.#+/'-]+\s+){1,5}?(?:(?:is|are)\s+(?:my\s+happy\s+place|"
                       r"a\s+hill\s+i\s+(?:would|will)\s+die\s+on)|makes?\s+me\s+want\s+to\s+(?:scream|cry))\b", re.I)


# "I find it easier when you put a comment on every line": how the person likes the agent to work
_FIND_IT_RE = re.compile(rf"^{_I}{_ADV}\s+find\s+it\s+(?:(?:much|way|a lot|so)\s+)?(?:easier|better|clearer|simpler|"
                         r"more helpful)\s+(?:when|if)\s+(?:you|u)\s+(?P<x>.+)$", re.I)


def _preference(clause: str) -> list[Statement]:
    easier = _FIND_IT_RE.match(clause)
    if easier and not re.search(r"\b(?:it|this|that|them)\W*$", easier.group("x"), re.I):  # ("… if you explain it")
        return [Statement(finish(third_person(clause)), "preference", keyword(easier.group("x")))]
    over = _OVER_RE.match(clause)
    if over:
        return [Statement(finish(f"The user prefers {over.group('a')} over {over.group('b')}"), "preference",
                          keyword(over.group("a")))]
    motto = _MOTTO_RE.match(clause)
    if motto and not _MOTTO_VERB_RE.search(motto.group("x")) and (motto.group("t").lower() != "always" or " " in motto.group("x")):
        # ("the build fails every time": what happens; "PR always" after an instruction: more of it)
        return [Statement(finish(f"The user wants {clause[motto.start('x'):]}"), "preference", keyword(motto.group("x")))]
    fronted = _FRONTED_RE.match(clause)
    if fronted and re.match(r"(?:it|this)\b", fronted.group("o"), re.I):
        return []  # "this I love", "it I can't stand": what is liked was said before
    if fronted:
        verb = fronted.group("v").lower()
        return [Statement(finish(f"The user {verb if ' ' in verb else conjugate(verb)} {fronted.group('o')}"
                                 f"{fronted.group('rest') or ''}"), "preference", keyword(fronted.group("o")))]
    if _TASTE_RE.match(clause):
        return [Statement(finish(_possessive(clause)), "preference", keyword(clause))]
    what = _WHAT_I_LIKE_RE.match(clause)
    if what:
        return [Statement(finish(_possessive(f"The user {what.group('v').lower()}s {what.group('x')}"
                                             f"{what.group('rest') or ''}")), "preference", keyword(what.group("x")))]
    best = _BEST_FOR_ME_RE.match(clause)
    if best and not re.match(r"^(?:it|that|this|please|kindly)\b", clause, re.I):  # ("please help me …": a request)
        return [Statement(finish(_possessive(clause) if "me" in clause.split() else f"{clause} for the user"),
                          "preference", keyword(best.group("x") or best.group("y")))]
    match = _PREFERENCE_RE.match(clause)
    if not match:
        return []
    value = _PREF_VERB_RE.match(clause)
    obj = value.group("v") if value else clause[match.end():]
    if re.search(r"\b(?:hate|love|stand)\W*$", clause, re.I) or _REACTION_RE.match(obj.strip()) or _of_something_said(clause) or re.match(r"^(?:you|u)\b", obj.strip(), re.I) and not re.search(
            r"\b(?:rather|prefer)\b", clause, re.I) or len(clause.split()) > 30:
        return []
    if re.match(rf"^{_I}'?d (?:like|love) to\b", clause, re.I):
        return []
    if _step_at_hand(obj) or re.search(r"\bfor this\W*$", obj, re.I):
        return []  # "I prefer we look at the logs first", "I'd rather not add a dependency for this": the task at hand
    alone = re.match(r"^(?P<x>.+?)\s+(?P<n>user|person|guy|gal|fan)(?:\s+here)?(?:,\s*\w+)?$", clause, re.I)
    if alone and not re.match(rf"^(?:{_I}|{_IM})\b", clause):  # "Emacs user here" → "The user is an Emacs user."
        x = alone.group("x")  # (as typed: a capital may be the sentence's or a name's)
        return [Statement(finish(f"The user is {'an' if x[:1] in 'aeiouAEIOU' else 'a'} {x} {alone.group('n').lower()}"),
                          "preference", keyword(x))]
    return [Statement(finish(third_person(clause)), "preference", keyword(obj or clause))]


_POINTS_BACK_RE = re.compile(r"\b(?:it(?!\s+(?:when|if)\b)|this(?!\s+(?:repo|project)\b)|them|"
                             r"that(?=\s+stuff\b))\b", re.I)


_KIND_OF_THING = r"(?:\s+[\w-]+){2,4}s\W*$"  # "those fake textbook dialogues": a kind of thing, not one said before


def _of_something_said(clause: str) -> bool:
    """Whether a liking is of what was said before ("I find them confusing", "I really like it"): what is liked is
    only in this conversation."""
    said = re.split(r",|(?<!\bit)\s+(?:but|when|unless|before|keep)\s+|\s+than\s+(?=(?:\w+\s+){0,2}?(?:them|it)\b)",
                    clause)[0]  # (not an aside or a condition after it; "flag false positives than drop them": of them)
    return bool(re.match(rf"^{_I}{_ADV}\s+(?:find|like|hate)\s+"
                         rf"(?:it(?!\s+(?:when|if)\b)|them|this|that|these(?!{_KIND_OF_THING})|those(?!{_KIND_OF_THING}))\b", clause, re.I)
                or _POINTS_BACK_RE.search(said) and not _names_something(said))


def _step_at_hand(preferred: str) -> bool:
    """Whether what the person prefers is a step of the task at hand ("we look at the logs first")."""
    return bool(re.match(r"^(?:that\s+)?we\s+\w+", preferred.strip(), re.I)
                and re.search(r"\b(?:first|next|now|then)\b", preferred, re.I))


# -- rule -------------------------------------------------------------------------------
_NOT_VERB = frozenset("""the a an this that these those my your our his her its their same mind again ever have has had
will was been is are were
once twice more less fun good bad true false happens works worked seems fails failed one ones something
nothing everything anything someone nobody everyone when what how why who teh seen heard done gone known
thought saw got felt""".split())  # (a past tense: what was, no instruction)
# what keeps happening, said after "always"/"never" ("always gets stuck", "never loads"): a complaint, no instruction
_HAPPENS = frozenset("""gets fails breaks crashes takes hangs times returns throws shows says gives ends comes goes runs
loses forgets picks dies freezes stalls errors complains asks tries looks feels turns starts stops makes loads finishes
passes reaches wants thinks knows""".split())
# a lone word after "always"/"never" that names no deed ("Never did.", "Always around.", "Never left.")
_NO_DEED = frozenset("do did around left".split())
_SAID_OF_IT_RE = re.compile(r"[a-z]{2,}(?<![suiy])s$|[a-z]+ies$")  # "it always duplicates the rows": a verb said of
# something (what it does), where an instruction has the bare verb ("always use", "never discuss"; "never floats" has no "it")
_LAPSES = frozenset("forget forgets mix mixes lose loses mess messes struggle struggles confuse confuses".split())
_RULE_PREFIX_RE = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\s+)?(?P<p>(?:from now on|going forward|moving forward|in (?:the )?future|"
    r"henceforth|by default)(?:,\s*|\s+(?=(?:please\s+)?[a-z]+\b))|(?:as a rule|in general|generally|"
    r"for (?:all|every|any) [\w\s-]{2,30}?|"
    r"for\s+(?!(?:the|these|those|details|years)\b)(?:[\w'’-]+\s+){0,2}?"
    r"[\w'’-]+s(?:\s+(?:to|for|from|in|on|about|with)\s+(?:[\w'’-]+\s+){0,2}?[\w'’-]+)?|"  # "For emails to clients, …"
    r"(?:when(?:ever)?|if|each time|every time|any time|anytime|before|after|once)\s+(?:you|we|I|i|writing|"
    r"adding|making|creating|editing|touching|committing|pushing|opening|reviewing|there's|there is|the|a|an|"
    r"something|anything|someone|tests?|[\w-]+ing|in doubt|unsure)\b[^,]{0,80}?)(?:,\s*|\s+(?=(?:please\s+)?(?:always|never|"
    r"don't|do not|keep)\b)))",
    re.I,
)
_RULE_LEAD_RE = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\s+)?"
    r"(?P<marker>don't ever|do not ever|never ever|always|never|don't|do not|dont|avoid|stop(?= \w+ing\b)|no more|make sure (?:to |you )?"
    r"(?:always )?|be sure to|remember to|you (?:should|must|shall|need to|have to)(?: always| never| not)?|"
    r"(?:I|i)(?: want| need| expect| would like|'d like|’d like| 'd like) you to(?: always| never)?|(?:I|i)'d (?:like|love|prefer) (?:it )?if you|"
    r"(?:I|i) prefer (?:that )?you|only|please|pls|use|prefer|keep|write|answer|reply|respond|format|put|add|"
    r"include|run|ask|check|call|address|refer|stick|default|wrap|name(?!'s| is)|sign|prefix|end|start|commit|push|"
    r"pin|lint|test|document|comment|explain|cite|give|show|tell|mention|limit|cap|follow|treat|leave|favou?r|"
    r"go|link|mark|tag|label|assume|skip|ping|cc|loop|squash|rebase|merge|open|file|log|print|return|raise|send|"
    r"update|bump|"
    r"talk to|speak (?:to|with)|check with|consult|involve|"
    r"type|spell|capitali[sz]e|lowercase|uppercase|indent|sort|split|batch|be|make|do)\b",
    re.I,
)
_ALWAYS_RULE_RE = re.compile(r"\b(?:always|never|from now on|going forward|moving forward|in (?:the )?future|"
                             r"when(?:ever)? (?:you can|possible|it makes sense|in doubt|unsure)|where(?:ver)? possible|"
                             r"if possible|unless I say otherwise|unless told otherwise|as a default|"
                             r"after (?:each|every)|before (?:\w+ing\s+)?(?:each|every|any)|"
                             rf"{_ONLY_WHEN}|before (?:touching|changing|merging|committing|pushing|deploying|releasing|shipping)\b|before (?:you|we) (?:commit|push|merge|deploy|ship|release|"
                             r"open a pr)|unless (?:I|i|we) (?:ask|say|tell|request)|"
                             r"by default|whenever|every time|each time|any time|at all times|no matter what|"
                             r"without exception|ever)\b", re.I)
_QUANTIFIED_RE = re.compile(r"\b(?:any|every|all)\s+new\b|(?<!the )(?<!this )(?<!that )(?<!these )(?<!those )\bnew\s+\w+|\b(?:for|on|in|with|to)\s+(?:any|every|all|each)\b|"
                            r"\banything\b|\beverything\b|\bno exceptions\b|\beven\b|\bfor me\b", re.I)
_MUST_RE = re.compile(r"^(?:every|all|any|each|anything|everything|nothing)\b\s*(?:new\s+)?[\w\s`./$-]{0,40}?\s*"
                      r"(?:must|has to|have to|needs? to|should|shall|may not|must not|can't|cannot|goes through|"
                      r"go through|requires?|needs?)\b", re.I)
# the way traffic takes through a system: a fact ("all internal traffic goes through Tailscale"), not a step every
# change must pass ("every new SaaS tool goes through her questionnaire")
_FLOW_RE = re.compile(r"^(?:all|everything)\s+(?:\w+\s+){0,2}?(?:traffic|outbound|requests)\s+"
                      r"go(?:es)?\s+through\b", re.I)
_STRONG = ("always", "never", "don't", "do not", "dont", "don't ever", "do not ever", "never ever", "stop")
_NO_RULE_RE = re.compile(r"^no\s+(?!need\b|worries\b|problem\b|rush\b|idea\b|luck\b|clue\b)(?:more\s+)?[\w`'-]+(?:\s+[\w`'-]+){0,3}\s+(?:after|before|on|in|without|anywhere|"
                         r"ever|unless|during|outside|inside|past|in|from|to|for)\b", re.I)
_PRONOUNS_ANYWHERE_RE = re.compile(r"\b(?:she|he|they|xe|ze)/(?:her|him|them|hers|his|theirs|xem|zir|they|she|he)\b", re.I)
_STYLE_VERBS = re.compile(r"^(?:use|prefer|keep|answer|reply|respond|format|stick|default|wrap|name|sign|"
                          r"prefix|spell|capitali[sz]e|lowercase|uppercase|indent|cite|call me|address me|refer to me|"
                          r"favou?r|avoid|only|limit|cap)\b", re.I)
_ONE_OFF_RE = re.compile(r"(?<![\w/])(?:[\w.-]+/[\w./-]*)|\b(?:there|then|it)$|\bthat(?:\s+(?:file|one|function|test|line|error|bug|pr|commit|"
                         r"branch|change|diff|script|class|method|module|thing|part|bit|section|page|query|endpoint)\b|$)|"
                         r"\b(?:this|these|those|here|the above|the file|the function(?! names?)|the test(?!s)|"
                         r"the error|the bug|the logs?|the output|the diff|the pr|the branch|the script|"
                         r"the script|line \d+|then$|the whole|the entire|the other|another|[\w/-]+\.(?:py|js|ts|tsx|go|rs|rb|java|md|json|yaml|yml|toml|"
                         r"sh|sql|css|html|txt|lock|cfg|ini))\b", re.I)


# a label that scopes what follows to now ("for this session only: …", "just for today: …")
_FOR_NOW_RE = re.compile(r"\b(?:for (?:this|the) (?:session|pr|task|ticket|branch|run|change|one)|for now|today only|"
                         r"just (?:for )?today|this time)\b", re.I)
_FOR_NOW_FIRST_RE = re.compile(rf"(?:{_FOR_NOW_RE.pattern})\s*,", re.I)  # "For this one, I'd rather you use bash"
# asking for one thing: a new piece of work ("give me 10 …", "write me a …"), whatever words of time describe it
_ASK_FOR_ONE_RE = re.compile(
    r"^(?:(?:please|pls|plz|can you|could you|just|now|ok|okay)\s+)*(?:give|show|send|get|find|list|make|write|draft|"
    r"generate|create|build|bring)\s+me\s+(?:a|an|some|\d+|one|two|three|four|five|ten|a few|a couple)\b", re.I)
# or a change to what is there ("redo the chart please"), unless a word of time makes it a way of working
# how to explain anything: a manner, after a generic object or none ("explain things step by step", "explain
# concepts slowly", "explain in simple English")
_HOW_TO_EXPLAIN_RE = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\s+)?explain\s+(?:(?:(?!the\b)[\w-]+\s+"
    r"(?=(?:things|stuff|concepts)\b))?(?:things|everything|"
    r"stuff|concepts|new concepts|it all|your answers|your reasoning|your changes|changes)\s+)?(?:to me\s+)?(?:step by step|"
    r"simply|slowly|in (?:plain|simple|easy) (?:english|language|terms|words)|like i'?m (?:five|5|new|a beginner)|"
    r"with (?:an? )?examples?|in detail|briefly)\b", re.I)
_ONE_OFF_ASK_RE = re.compile(
    r"^(?:(?:please|pls|plz|can you|could you|just|now|ok|okay)\s+)*(?:redo|rerun|retry|undo|revert|rename|fix|delete|"
    r"remove|move|rewrite|reword|regenerate|tidy up|clean up|add|bump|deploy|update|merge|install|draft|research|look up|"
    r"summari[sz]e|find|list)\b", re.I)


def _only_here(said: str) -> bool:
    """Whether an instruction is about only what this conversation points at ("do that", "mix them up", "write a
    new one")."""
    return bool(re.fullmatch(r"(?:[\w'’-]+\s+){0,4}(?:that|this|it|them|one|again)(?:\s+(?:up|out|again|too|either|"
                             r"here))?", re.sub(r"[\s,]+(?:please|pls|plz)$", "", said.strip(" .!,"), flags=re.I), re.I))


_MIND_ONLY_RE = re.compile(r"^(?:(?:so|please|pls)\s+)*(?:keep|bear) (?:that|this) in mind\W*(?:going forward|pls)?\W*$",
                           re.I)


_CALL_ME_SO_RE = re.compile(r"^call me (?:a\s+)?(?:old[- ]fashioned|paranoid|fussy|picky|pedantic|stickler)\b", re.I)


def _rule(clause: str, hint: str | None) -> list[Statement]:
    if re.match(r"^(?:(?:you can|please)\s+)?call me\s+(?-i:[A-Z])", clause, re.I):
        return []  # "Call me Nnamdi": a name (identity), not an instruction
    if _CALL_ME_SO_RE.match(clause):
        return []  # "Call me fussy, but …": a figure of speech
    lead = _RULE_PREFIX_RE.match(clause)
    if _MIND_ONLY_RE.match(clause[lead.end():] if lead else clause):
        return []  # "so keep that in mind", "if you suggest venues, keep that in mind": what to keep in mind was said
        # before it, and is kept there
    if _ONE_OFF_ASK_RE.match(clause) and not _OUTLIVES_RE.search(clause):
        return []  # "give me 10 icebreaker questions", "redo the plot palette please": a task, not a way of working
    asked = re.sub(r"[\s,]+(?:please|pls|plz)$", "", clause, flags=re.I)
    if asked != clause and re.search(r"[\w)]$", asked) and not _ONE_OFF_RE.search(asked) and not _only_here(asked) \
            and not re.match(r"^(?:yes|no|ok|okay|sure|thanks|one|more|help|stop|wait)\b", clause, re.I) and not \
            re.fullmatch(r"(?:the|this|that|these|those|my|your)(?:\s+[\w-]+){1,3}", asked, re.I) and not \
            re.match(rf"{_I}\s+(?:need|want|would like)\s+(?:help|a|an|some|one)\b", asked):  # ("the summary please",
        # "I need help with vlookup please": a thing asked for now; "British spelling please" is a way of writing)
        return [Statement(finish(asked), "rule", keyword(asked, last=True))]  # ("rerun it pls" is about the moment)
    if _NO_RULE_RE.match(clause) or _MUST_RE.match(clause) and not _FLOW_RE.match(clause) or hint == "rule" and re.match(
            r"^no\s+\w+", clause, re.I):
        return [Statement(finish(clause), "rule", keyword(clause, last=True))]
    prefix = _RULE_PREFIX_RE.match(clause)
    body = clause[prefix.end():] if prefix else clause
    match = _RULE_LEAD_RE.match(body)
    if not match:
        if prefix and len(body.split()) >= 2 and not re.match(
                r"^(?:I|i|I'm|i'm|we|we're|it|it's|that|this|there|he|she|they|you|you're)\b", body) and not (
                re.match(r"^(?:the|its|their|these|those)\b", body, re.I) and not re.search(
                    r"\b(?:must|should|shall|has to|have to|needs? to|goes|go)\b", body)):
            # ("when I run the suite, the tests take 25 min" says what happens; "…, the tests must pass" is a rule)
            return [Statement(finish(clause), "rule", keyword(body, last=True))]
        return []
    marker = match.group("marker").casefold()
    after = body[match.end():].split()
    if _only_here(" ".join(after)):
        return []  # "never do that", "don't write a new one": what it is about is only in this conversation
    nxt = after[0].casefold().strip(",.") if after else ""
    if marker in _STRONG and (not nxt or nxt in _NOT_VERB or len(after) == 1 and nxt in _NO_DEED or nxt.endswith(
            "ed") and nxt not in ("need", "feed", "seed", "embed") or nxt in _HAPPENS) or \
            marker == "always" and nxt in _LAPSES or marker in ("always", "never") and _SAID_OF_IT_RE.match(nxt) and re.search(
                r"\b(?:it|this|that|he|she|which|who|everything|something|nothing)\s+$",
                clause[:len(clause) - len(body) + match.start("marker")], re.I):  # (the words before the marker)
        return []  # ("always gets stuck at step 3": what keeps happening, not what to do; "always forget": the
        # person's own lapse, said without "I")
    if re.match(r"^(?:don't|do not|dont)\s+(?:worry|bother|mind|know|think|care|forget about|hesitate|get|have to|"
                r"ask me why|be surprised|need|be sorry|apologi|remember|understand|see|like|want|feel|really|even|"
                r"judge|panic)\b",
                body, re.I):
        return []
    if re.match(r"^keep (?:going|at it|it up|on|trying|digging|looking|pushing)\b", body, re.I):
        return []  # encouragement, not a standing instruction
    standing = bool(prefix or _ALWAYS_RULE_RE.search(clause)) or marker.startswith(("you ", "i ")) or hint == "rule"
    if not standing and re.match(r"^(?:don't|do not|dont) forget to\b", body, re.I):
        return []  # a reminder for the task at hand ("don't forget to bump the version")
    one_off = _ONE_OFF_RE.search(clause)
    if marker in _STRONG or marker in ("avoid", "no more"):
        if one_off and not standing and not (
                re.fullmatch(r"(?:there|then|it)", one_off.group(0).strip(), re.I) and _QUANTIFIED_RE.search(clause)):
            return []
    elif not standing:
        generic = _STYLE_VERBS.match(re.sub(r"^(?:please|pls|plz|kindly)\s+", "", body, flags=re.I)) or (
            _HOW_TO_EXPLAIN_RE.search(body))  # ("explain things step by step": how, for anything)
        if one_off or not (generic or _QUANTIFIED_RE.search(clause)):
            return []
    text = re.sub(r"^(?:please|pls|plz|kindly)\s+", "", clause, flags=re.I)
    text = re.sub(r",?\s+(?:please|pls|plz|thanks|thx|ty)$", "", text, flags=re.I)
    text = re.sub(r"^(?:I|i)(?: want| need| expect| would like|'d like|’d like) you to\s+", "", text)
    if text.startswith(("I ", "i ", "my ", "My ", "I'd ")):
        text = third_person(text)  # ("I'd love it if you kept …": said of the user)
    liked = re.match(r"^prefer\s+(?P<v>.+)$", text, re.I)
    if liked and hint != "rule":  # "prefer short answers": a liking said without its "I", not an instruction
        return [Statement(finish(f"The user prefers {liked.group('v')}"), "preference", keyword(liked.group("v")))]
    return [Statement(finish(text), "rule", keyword(" ".join(after) or clause, last=True))]


# -- decision ----------------------------------------------------------------------------
_WE = r"(?:we|We|the team|The team|our team|Our team|team|Team)"
_WITH_SOMEONE = r"(?P<w>[\w'’-]+)\s+and\s+(?=I\s+(?:decided|agreed)\b)"  # "Femi and I agreed to …"
_DECISION_RE = re.compile(
    rf"^(?:{_WITH_SOMEONE}I\s+\w+\b|"
    rf"{_WE}(?:'ve| have|'re| are|'ll| will| had)?(?:\s+(?:finally|just|officially|now|all|collectively|"
    r"formally|already|also|eventually|ultimately))*\s+(?:decided|agreed|chose|chosen|picked|settled on|opted|"
    r"went with|gone with|landed on|voted|committed to|standardi[sz]ed on|aligned on|switched|switching|moved|"
    r"moving|migrated|migrating|changed|changing|going with|going(?=\s+(?-i:[A-Z`]))|going to (?:use|go with|switch|move|migrate|drop|"
    r"stick|adopt|keep)|sticking with|staying with|staying on|dropped|dropping|ditched|ditching|replaced|"
    r"replacing|deprecated|deprecating|retired|retiring|sunset|sunsetting|killed|killing|abandoned|abandoning|scrapped|"
    r"shelved|ruled out|"
    r"adopted|adopting|standardi[sz]ing|consolidat(?:ed|ing)|rewr(?:ote|iting)|no longer (?:use|offer)|are not using|"
    r"stopped (?:using|offering)|quit using|(?:(?:are |'re )?not|aren't) doing .+ (?:anymore|any more)|"
    r"aren't using|won't (?:use|be using)|will not use|don't use|do not use|use|stick with|stick to|go with|"
    r"switch to|move to|migrate to|drop|ditch|adopt|keep|are keeping|keeping|kept|won't|will stay|stay|staying|"
    r"renaming|rename|renamed|not adopting|not moving|not switching|not using|introducing|introduce|"
    r"ended up (?:choosing|picking|going with|using|with|on)|made (?:the|a) (?:call|decision)|took the decision|"
    r"(?:using|running) .+ (?:instead of|rather than)|"
    r"going to (?!be\b|need\b|have\b|see\b|talk\b|check\b)\w+|be using(?=.*\b(?:from now on|everywhere)\b)|(?:'ll|will) (?!be\b|need\b|have\b|see\b|talk\b|"
    r"check\b|figure\b|look\b|discuss\b|sync\b|circle\b|get back\b|let\b|probably\b|try\b|deal\b|fix\b)\w+)\b|"
    r"(?:[\w`.-]+\s+){1,3}(?:stays|remains|it is|is off the table|is out|is dead|is cancelled|is canceled|wins)\b|"
    r"(?:let's|lets|let us)\s+(?:not\s+|just\s+|all\s+)?(?:go with|use|stick with|stick to|switch|move|keep|"
    r"standardi[sz]e|drop|ditch|adopt|migrate|avoid|choose|pick|settle|stay|try|do|make|put|run|host|deploy|"
    r"build|write|rewrite|store|ship|target|support|require|default|skip|remove|replace)\b|"
    rf"(?:the\s+|our\s+)?(?:final\s+)?(?:decision|call|plan(?!\s+is\s+to\s+(?:look|check)\b)|verdict|consensus)(?:\s+(?:is|was|has been|:))|"
    r"it's been decided|it was decided|decision made|(?:i|I)(?:'ve| have)?(?:\s+(?:finally|just|now))?\s+"
    r"(?:decided|chose|picked|settled on|switched|moved|migrated|went with|opted)\b|"
    r"(?:going|sticking|staying) with\b|switching (?:from|to)\b|moving (?:from|to)\b|no more\b|"
    r"(?:scratch|forget|drop|ditch)\s+the\s+(?:[\w`.-]+\s+){1,4}(?:idea|plan)\b|"

    r"(?:we're|we are) (?:not|no longer) (?:going to|gonna) use\b)",
)
_DECISION_I_RE = re.compile(r"^(?:(?:after|following|in|at|on|since|from|for)\s+[\w\s'’-]{1,30}?,?\s+(?=we\b|the team\b)|"
                            r"(?:going forward|from now on|moving forward|starting (?:today|now|next \w+|\w+day))\s*,?\s+"
                            r"(?=we\b))?"
                            + _DECISION_RE.pattern[1:], re.I)
_FROM_TO_RE = re.compile(r"\bfrom\s+(?P<old>[\w.+#/-]+(?:\s+[\w.+#/-]+)?)\s+(?:to|for)\s+(?P<new>[\w.+#/-]+)", re.I)
_INSTEAD_RE = re.compile(r"\b(?:instead of|rather than|over|replacing|not)\s+(?P<old>[A-Z`][\w.+#/-]*"
                         r"(?:\s+[A-Z\d][\w.+#/-]*)?)")
_DROP_FOR_RE = re.compile(r"\b(?:drop(?:ping|ped)?|ditch(?:ing|ed)?|replac(?:e|ing|ed)|retir(?:e|ing|ed)|"
                          r"kill(?:ing|ed)?|deprecat(?:e|ing|ed)|abandon(?:ing|ed)?|no longer use|not using)\s+"
                          r"(?P<old>[\w.+#/-]+(?:\s+[A-Z\d][\w.+#/-]*)?)", re.I)


_NOT_A_CHOICE_RE = re.compile(r"^(?:not|starting)\b|.*\b(?:already|was|got|ate|last\s+\w+)\b", re.I)
# a decision to wait, retry or carry on with the work at hand
_DECIDED_TO_WAIT_RE = re.compile(r"\b(?:decided|agreed)\s+to\s+(?:just\s+)?(?:hold\b(?=.*\b(?:until|till)\b)|hold off|retry|wait|"
                                 r"pause|let it run|pick (?:this|it) up)\b|\b(?:decided|agreed)\s+to\b.*\btoday\b",
                                 re.I)  # (not "hold standups on Zoom"; "decided to skip lunch today": the day at hand)
_DECIDED_WHAT_BEFORE_RE = re.compile(r"\bdecided\s+(?:it|this|that(?=\s+last\b))\b", re.I)


def _decision(clause: str, hint: str | None) -> list[Statement]:
    filler = re.match(_WITH_SOMEONE, clause)
    if filler and filler.group("w").casefold() in lx.COMMON_CAPS:
        clause = clause[filler.end():]  # "Yeah and I decided …": no one decided with the person
    match = _DECISION_I_RE.match(clause)
    if not match:
        person = subject_person(clause)  # ("…: Ana owns deploys" is about Ana)
        if hint == "decision" and len(clause.split()) >= 2 and not (
                person and _PERSON_VERB_RE.match(clause[len(person):].strip())):
            text = clause if re.match(r"^(?:we|our|the)\b", clause, re.I) else f"We decided: {clause}"
            return [Statement(finish(text), "decision", _choice(clause), old=_old_value(clause),
                              subject=_subject(clause))]
        return []
    if re.search(r"\b(?:voted|agreed|decided|moved)\W*$", match.group(0), re.I) and re.fullmatch(
            r"(?:(?:on|for)\s+(?:it|that|this)|unanimously|yesterday|today|last \w+)?", clause[match.end():].strip(" .,!"),
            re.I):
        return []  # "the team voted": who decided, not what (it belongs to the clause it follows)
    if _DECIDED_WHAT_BEFORE_RE.search(clause):
        return []  # "we decided this in the arch review": what "this" is, the clause before said
    if _DECIDED_TO_WAIT_RE.search(clause):
        return []  # "we decided to hold the pour till the pump gets in", "… to retry in 30 minutes": the work at hand
    low = match.group(0).casefold()
    if re.match(r"^(?:we|the team|our team|team)(?:'ll| will)?\s+use\b", low) and "'ll" not in low and "will" not in low:
        return []  # "we use X" is a fact
    if re.match(r"^(?:let's|lets|let us)\s+(?:just\s+)?(?:do|make|put|run|try|write|build|ship|skip|remove)\b", low) \
            and not _STANDING_RE.search(clause) and hint != "decision":
        return []  # "let's run the tests" is procedure
    if re.match(r"^(?:let's|lets|let us)\b", low) and re.search(r"\bhere\b", clause, re.I):
        return []  # "let's use a dict here instead": how this piece of work is done
    text = clause
    lets = re.match(r"^(?:let's|lets|let us)\s+", clause, re.I)
    if lets:
        text = "We decided to " + clause[lets.end():]
    elif re.match(r"^(?:going|sticking|staying) with|^switching|^moving|^no more", clause, re.I):
        text = "We decided: " + clause
    elif re.match(r"^(?:i|I)\b", clause):
        text = third_person(clause)
    return [Statement(finish(text), "decision", _choice(clause[match.end():] or clause), old=_old_value(clause),
                      subject=_subject(clause))]


def _old_value(clause: str) -> str | None:
    for pattern in (_FROM_TO_RE, _DROP_FOR_RE, _INSTEAD_RE):
        found = pattern.search(clause)
        if found:
            value = re.sub(r"^(?:the|a|an|our|using)\s+", "", found.group("old").strip(" .,`"), flags=re.I)
            value = re.split(r"\s+(?:for|in|on|at|as|with|because|since|and|to)\b", value)[0]
            if value and value.casefold() not in ("it", "that", "this", "them"):
                return value
    return None


def _choice(phrase: str) -> str:
    """The thing decided on: its capitalized or code-spanned name, else its first content words."""
    phrase = re.split(r"\s+(?:for|in|on|because|since|as)\s+(?:the|our|my)\b", phrase)[0]
    names = re.findall(r"`([^`]+)`|\b([A-Z][\w.+#-]*(?:\s+[A-Z\d][\w.+#-]*)?)", phrase)
    for code, name in names:
        if code or name not in ("I", "We"):
            return (code or name).strip()
    return keyword(phrase)


# -- schedule ----------------------------------------------------------------------------
# a time phrase before the person: "Around Ramadan I …", "On Fridays, I …", "Every other week my …"
_LED_RE = re.compile(rf"^(?P<lead>(?:around|on|in|during|every|each|most|after|before|at|until|from|over)\s+"
                     rf"[^,]{{1,40}}?|(?:{lx.DAYS})s),?\s+(?P<rest>(?:{_IM}|{_I}|my)\b.*)$", re.I)


def _one_plan(clause: str) -> bool:
    """"Let's sync at 2pm", "let's do the retro on Friday at 4": one meeting planned, not when things happen (unless
    it recurs: "let's meet every Monday at 10")."""
    return bool(re.match(r"(?:let's|lets|let us|shall we)\b", clause, re.I))


# "put me on sundays instead", "move me to the early shift": a request about a rota, not when anything happens
_MOVE_ME_RE = re.compile(r"(?:please\s+)?(?:put|move|swap)\s+me\b", re.I)


def _schedule(clause: str) -> list[Statement]:
    if _MOVE_ME_RE.match(clause):
        return []
    if _LEAVE_RE.match(clause):  # a span of dates the person is away
        return [Statement(finish(third_person(clause)), "schedule", keyword(clause))]
    named = _COLLEAGUE_RE.match(clause)
    person = subject_person(clause)
    acts = person and re.match(r"(?:\s+(?:from|at|in|on)\s+\w+)?\s+(?:(?!is\s+(?:(?:only|usually|always|never|also)\s+)*"
                               r"(?:in|off|out|away|around|here|available|on site)\b)(?!is\s+(?:at\s+\d|every|each)\b)"
                               r"(?!runs\s+(?:on|at|every|each|"
                               r"nightly|daily|weekly|monthly|hourly|twice|once)\b)\w+s|has|does)\b",
                               clause[len(person):]) and not \
        re.match(rf"(?:{lx.DAYS}|{lx.MONTHS})s?\b", person, re.I)
    when = lx.RECURRENCE_RE.search(clause)
    if acts and person and when and not re.match(r"\s+(?:is|\w+s\s+(?:is|are))\b", clause[len(person):]) and not re.fullmatch(
            r"(?:every|each)\s+release", when.group(0), re.I) and not (re.fullmatch(
            r"\w+ly", when.group(0)) and re.search(r"\b(?:the|a|an|our|my|their|his|her|its|any|each|every)\s+"
                                                  r"(?:[\w-]+\s+)?$", clause[:when.start()], re.I)):
        # "Nnamdi orders reagents every second Tuesday", "Keiko picks the kids up on Tuesdays": when the person does it
        # (but "Fatima runs the weekly infra sync" is what she does, "Ilse decides what goes into each release" what
        # she decides, and "Mei-Ling is the one who triages issues on Mondays" who she is; "Salaried folks are monthly"
        # names no one)
        return [Statement(finish(_possessive(clause)), "schedule", keyword(clause))]  # (no subject: a person is no
        # project to file it under, as "Ollie is only in on Saturdays")
    if named and named.group("n") or acts:
        return []  # "our CEO Maya wants weekly metrics", "Fatima runs the weekly infra sync": about Maya, Fatima
        # (but "Ollie is only in on Saturdays" is when Ollie is there)
    said = clause
    clause = re.sub(r"`[^`]*`|\S+/\S*|\S+\.(?:sql|py|js|ts|go|rb|rs|java|json|ya?ml|toml|csv|md|txt|sh)\b", "x", clause,
                    flags=re.I)  # a file or path is no time ("reports/monthly.sql")
    recurring = lx.RECURRENCE_RE.search(clause) or re.search(
        rf"\b(?:most|all)\s+(?:days|mornings|evenings|weekdays|weeks)\b|^(?:{lx.DAYS})s\b|\b(?:is|are)\s+(?:{lx.DAYS})s\b|"
        rf"\b(?:working|office|core|work) hours\b|\b(?:{lx.DAYS})(?:day)?s?\s+(?:to|through|thru|[–-])\s+(?:{lx.DAYS})",
        clause, re.I)
    timed = (lx.EVENT_RE.search(clause) and (lx.CLOCK_RE.search(clause) or re.search(
        rf"\b(?:on|every|each|until|till|starts?|ends?|begins?|is)\s+(?:the\s+)?(?:{lx.DAYS}|{lx.MONTHS}|"
        r"\d{1,2}(?:st|nd|rd|th)\b)|\bat\s+\d{1,2}(?![:.\d%])\b", clause, re.I))) or re.search(
        rf"\b(?:starts?|begins?|ends?|happens?|closes?|opens?|is due|are due|goes live|go live|kicks? off|"
        rf"must be (?:done|ready|sent|filed|submitted)|has to be (?:done|ready|sent|filed|submitted))\s+"
        rf"(?:in|on|at|by|every)\s+(?:the\s+)?(?:{lx.MONTHS}|(?:{lx.DAYS})|\d{{1,2}}(?:st|nd|rd|th)\b)", clause, re.I)
    hours = _RANGE_RE.search(clause) and re.search(r"\b(?:online|offline|available|around|reachable|at my desk|"
                                                   r"working|work|in the office)\b", clause, re.I)
    if not (recurring or timed or hours) or _PASSING_RE.search(clause) or re.match(r"(?:been|being)\b", clause, re.I):
        return []
    if not recurring and _one_plan(clause):
        return []  # ("I'm usually online 9-5 CET": the hours a person keeps; "been doing it on weekends": no subject)
    clause = said
    text = third_person(clause) if re.match(rf"^(?:{_I}|{_IM}|my)\b", clause) else _possessive(clause)
    led = _LED_RE.match(clause)
    if led:  # "Around Ramadan I shift my hours …" → "Around Ramadan, the user shifts their hours …"
        said = third_person(led.group("rest"))
        text = f"{led.group('lead').rstrip(' ,')}, {said[:1].lower()}{said[1:]}"
    anchor = lx.EVENT_RE.search(clause)
    return [Statement(finish(text), "schedule", keyword(anchor.group(0) if anchor else clause),
                      subject=_subject(clause))]


# -- fact --------------------------------------------------------------------------------
_FACT_VERBS = (r"(?:is|are|was|isn't|aren't|runs|run|lives|live|sits|sit|talks|talk|stores|store|depends|depend|"
               r"deploys|deploy|builds|build|serves|serve|handles|handle|has|have|contains|contain|points|point|"
               r"reads|read|writes|write|needs|need|requires|require|relies|rely|ships|ship|goes|go|gets|get|"
               r"takes|take|calls|call|uses|use|hosts|host|exposes|expose|listens|listen|returns|return|sends|send|"
               r"expects|expect|supports|support|targets|target|includes|include|caps|cap|limits|limit|"
               r"syncs|sync|mirrors|mirror|publishes|publish|pulls|pull|pushes|push|owns|own|lacks|backs|"
               r"can't|cannot|can|must|should|will|won't|doesn't|don't|only|never|always|auto-?deploys|"
               r"expires|expire|rotates|rotate|times out|retries|retry|caches|cache|proxies|proxy|"
               r"is hosted|is written|is built|is deployed|is backed|is behind|is on|is in|lives in|"
               r"runs on|runs in|requires|belongs|belong|connects|connect|wraps|wrap|emits|emit|logs|log)")
_FACT_SUBJECT_RE = re.compile(
    rf"^(?:(?:the|our|my|their|all|every|each|both)\s+)(?P<s>(?:[\w.+/#`-]+\s+){{0,4}}?(?:{lx.THINGS}))(?:'s)?\s+"
    rf"(?:\w+\s+)?{_FACT_VERBS}\b",
    re.I,
)
_FACT_BARE_RE = re.compile(rf"^(?P<s>(?:{lx.THINGS}))\s+(?:\w+\s+)?{_FACT_VERBS}\b", re.I)
_FACT_NAMED_RE = re.compile(
    rf"^(?P<s>[A-Z`][\w.+#/`-]*(?:\s+[A-Z\d][\w.+#/-]*)?(?:\s+(?:{lx.THINGS}))?)(?:'s\s+(?:[\w-]+\s+){{0,2}}?"
    rf"(?:{lx.THINGS}))?\s+(?:uses|runs on|runs in|runs|is written in|is built (?:with|on|in)|is deployed (?:to|on)|"
    r"deploys (?:to|from|on)|depends on|is hosted (?:on|in)|stores|is (?:just )?(?:a|an|our|the)\s+|"
    r"is where we\b|lives in|talks to|"
    r"sits (?:on|behind|in)|is backed by|is behind|serves|exposes|targets|supports|requires|needs|has|is on|"
    r"is in|reads from|writes to|pulls from|pushes to|publishes to|is (?:powered|managed|maintained|owned) by|"
    r"only|can't|cannot|must|never|always|doesn't|won't|auto-?deploys|is (?:\w+ )?(?:compatible|limited|capped|"
    r"configured|pinned|locked|set)\b)",
)
_WE_FACT_RE = re.compile(
    rf"^we(?:'re|’re| are)(?:{_ADV})\s+(?:on\s+(?!(?:a|an|the|it|this|that|track|call|leave|holiday|vacation|break|"
    rf"time|schedule|board|hold|top|fire|standby|site|our|my|mute|pto|shift|duty)\b)|an?\s+[\w.#+-]+(?:\s+[\w.#+-]+)?\s+(?:shop|house|company|startup)\b)|"
    rf"^(?:{_WE}|our company|the company)(?:{_ADV})\s+(?:use|run|deploy|host|ship|build|store|keep|have|"
    r"rely on|depend on|are on|'re on|target|support|release|publish|track|manage|write|test|pin|vendor|"
    r"mirror|monitor|log|back up|encrypt|sign|tag|version|serve|sell|make|maintain|own|'ve got|got)\b",
    re.I,
)


_PASSING_RE = re.compile(r"\b(?:is|are) (?:(?:still|currently|now)\s+)?(?:stuck|backed up|at \d+\s*%|"
                         r"running (?:hot|low|out)|out of|over capacity|overloaded|behind|ahead)(?!\w)|"
                         r"\b(?:has|have) \d+\S*\s+\w+\s+(?:backed up|queued|pending|stuck|failing)\b|"
                         r"\bkeeps? \w+ing\b", re.I)
_FACT_STATUS_RE = re.compile(r"\b(?:now|already|anymore|yet)$|\b(?:has|have) been \w+(?:ed|en)\b|\b(?:is|are) (?:built|done|deployed|merged|finished|complete|"
                             r"completed|live|out|back|fixed|updated|upgraded)\b(?!\s+(?:with|on|in|from|to|by|via|through|as))|"
                             r"\b(?:new|latest) version\b|\b\d+\s*(?:ms|s|sec|secs|seconds|minutes|mins)$", re.I)


# how long something always takes ("the iOS build takes about 25 minutes", "tokens expire after 15 minutes"), not how
# long it took this time ("the smoke test timed out after 30s")
_HOW_LONG_RE = re.compile(r"\b(?:takes|expires?)\b.*\b\d+\s*(?:ms|s|sec|secs|seconds|minutes|mins)$", re.I)


# Any "the/our <noun phrase> <verb> …" whose predicate names something concrete: a product or proper name,
# code, a path, an address, a version or an identifier ("the raw zone is s3://orbit-raw", "flag names are
# kebab-case", "the on-prem stuff is VMware"); how things are right now is not a fact ("the build is red").
_FACT_ANY_RE = re.compile(
    rf"^(?:(?:the|our|all our|all|each|every)\s+)(?P<s>(?:(?!(?:the|a|an|this|that|it|is|are)\b)[\w.+/#'’-]+\s+){{0,3}}?"
    rf"(?!(?:the|a|an|this|that|it|is|are)\b)[\w.+/#'’-]+)\s+(?:\w+ly\s+)?(?:{_FACT_VERBS}|(?-i:[a-z]+[^s\W]s))\s+"
    r"(?P<p>.+)$", re.I)
# "Docker images go to GHCR", "Secrets live in Vault": a plural subject without "the"/"our", a plain verb
_FACT_PLURAL_RE = re.compile(
    r"^(?P<s>(?:[\w.+#-]+\s+){0,2}(?-i:[A-Za-z][a-z]+s))\s+(?:go|live|run|sit|stay|land|get|belong|expire|"
    r"rotate|sync|deploy|build|publish|point|come)\s+(?P<p>.+)$", re.I)
# "error tracking goes to Sentry", "payroll is handled by Deel": where a kind of work is handled, no article needed
_FACT_ROUTED_RE = re.compile(
    r"^(?P<s>(?!(?:it|this|that|everything|anything)\b)(?:[a-z][\w-]*\s+){0,2}"
    r"[a-z][\w-]*)\s+(?:goes|(?:is|are)\s+handled)\s+(?P<p>(?:to|through|by)\s+.+)$",
    re.I)
_CONCRETE_RE = re.compile(r"`[^`]+`|\w/|/\w|://|\b\d+(?:\.\d+)+\b|\b[a-z]+(?:-[a-z0-9]+)+\b|"
                          r"(?<=\s)(?-i:[A-Z][\w.+#-]*[A-Za-z0-9])|(?-i:\b[A-Z]{2,}\d*\b)|\b\d+\s*(?:gb|tb|mb|pods?|nodes?|"
                          r"replicas?|days?|hours?|minutes?|%)\b", re.I)
_TRANSIENT_RE = re.compile(r"\b(?:now|today|tonight|right now|currently|at the moment|again|broken|failing|"
                           r"irrelevant|odd|confusing|a mix|a bit of a mix|terrible|awful|ugly|gross|"
                           r"flaky|red|green|down|slow|weird|a mess|messy|wrong|fine|ok|okay|done(?!\s+(?:via|through|by|with)\b)|ready|stuck|"
                           r"this week|yesterday|this morning|for now|temporarily|i think|maybe|probably|seems?|"
                           r"taking forever|is gone|is running(?!\s+(?:on|in|at)\b)|battery)\b",
                           re.I)
# … of which a sentence the classifier reads as a fact (and the rules read nothing in) is kept from only the words of
# a state that passes: the classifier weighs the rest itself ("The battery pack is 4S LiFePO4", "The feed is the
# Transistor one now, not the old Libsyn link")
_PASSING_STATE_RE = re.compile(r"\b(?:broken|failing|flaky|red|green|down|slow|stuck|a mess|messy|wrong|"
                                 r"done(?!\s+(?:via|through|by|with)\b)|ready|taking forever|is gone|"
                                 r"is running(?!\s+(?:on|in|at)\b)|irrelevant|today|tonight|this week|yesterday|this morning|right now|"
                                 r"for now|temporarily|again|i think|maybe|probably|seems?)\b", re.I)


# What a conversation is busy with at the moment, not what the system is: "the bug is in src/parse.py".
_WORK_AT_HAND = frozenset("""bug bugs error errors issue issues problem problems fix fixes pr prs diff diffs commit
commits change changes output result results traceback crash crashes exception exceptions warning warnings file files
line lines function method test tests answer question plan idea task ticket draft todo typo culprit reason
difference thing stuff part step""".split())


# what the person charges ("my day rate is £450", "I charge €90 an hour"): a fact of their business
_TERMS_RE = re.compile(rf"^(?:my\s+(?:(?:day|hourly)\s+)?rate\s+is|{_I}\s+charge)\s+"
                       r"(?P<v>\S*\d.*)$", re.I)


def _terms(clause: str) -> list[Statement]:
    found = _TERMS_RE.match(clause)
    return [Statement(finish(third_person(clause)), "fact", keyword(found.group("v")))] if found else []


# how the team always works ("we always squash-merge PRs"): a convention of the project, not a complaint ("we
# always forget the changelog")
_WE_ALWAYS_RE = re.compile(r"^we\s+always\s+(?!forget\b)"
                           r"[a-z][\w-]*\s+\S", re.I)


# "the thing that sends transactional email is Postmark": what does a job, said of the job
_THING_THAT_RE = re.compile(r"^(?:the|our)\s+(?:thing|service|tool|job)\s+(?:that|which)\s+(?P<does>\w+s\b.*?)\s+"
                            r"(?:is|are)\s+(?P<s>(?!(?:it|this|that|a|an|the|so|too|very|not)\b)[\w`][\w.`-]*"
                            r"(?:\s+(?-i:[A-Z])[\w.-]*)?)(?P<rest>(?:,.*)?)$", re.I)


def _fact(clause: str, hint: str | None) -> list[Statement]:
    if _FLOW_RE.match(clause):  # "everything outbound goes through a NAT gateway"
        return [Statement(finish(clause), "fact", keyword(clause))]
    does = _THING_THAT_RE.match(clause)
    if does:
        return [Statement(finish(f"{does.group('s')} {does.group('does')}{does.group('rest')}"), "fact", keyword(does.group("s")),
                          subject=does.group("s"))]
    if _WE_FACT_RE.match(clause) and re.search(r"\b(?:it|this|that|them|these|those)\b", clause, re.I) or \
            re.search(r"\b(?:that|worth it)\W*$", clause, re.I):
        return []  # ("the hosting provider only supports that", "the migration isn't worth it": what it is about was
        # said before; "the billing code has no tests and nobody wants to touch it" names its "it")
    match = _FACT_SUBJECT_RE.match(clause) or _WE_FACT_RE.match(clause) or _FACT_BARE_RE.match(clause)
    if not match:
        loose = _FACT_ANY_RE.match(clause) or (_FACT_PLURAL_RE.match(clause) or _FACT_ROUTED_RE.match(clause)
                                               if not _RULE_LEAD_RE.match(clause) else None)
        if loose and _CONCRETE_RE.search(loose.group("p")) and \
                loose.group("s").split()[-1].casefold() not in _WORK_AT_HAND:
            match = loose
    if not match and not re.search(r"\b(?:it|this|that|them|these|those)\b", clause, re.I):
        match = _WE_ALWAYS_RE.match(clause)  # (what "them" is, the clause does not say)
    if not match:
        match = _FACT_NAMED_RE.match(clause)
        if match and (match.group("s").casefold() in lx.COMMON_CAPS - lx.PRODUCTS - {
                "staging", "prod", "production", "main", "develop", "master", "dev", "release"}):
            match = None
    if not match or len(clause.split()) < 3 or _FACT_STATUS_RE.search(clause) and not _HOW_LONG_RE.search(clause) or \
            _PASSING_RE.search(clause) or \
            _TRANSIENT_RE.search(clause) and match.re is not _WE_FACT_RE:
        return []
    subject = _subject(clause, match)
    text = third_person(clause) if re.match(r"^my\b", clause, re.I) else clause
    kind = "people" if _of_someone(clause) else "fact"
    return [Statement(finish(text), kind, keyword(subject or clause), subject=subject)]


def _of_someone(clause: str) -> bool:
    """Whether a clause shaped like a fact says who a person is or what they do: it says what someone or something
    "is", or starts with a name, the corpus-trained classifier reads it as about people more than as a fact, and it
    names no system ("Dimitri is the internal moderator", "The landlord is Mr. Mwangi", "Nour has MENA"; "Compass is
    the staging db" and "error tracking goes to Sentry" are facts, whatever a name like Compass or Sentry reads as)."""
    if lx.THING_RE.search(clause) or not (re.search(r"\b(?:is|are)\b", clause, re.I) or leading_name(clause)):
        return False  # (the cheap tests first: the classifier is asked only of a clause they leave)
    likely = learned.probabilities(clause)
    return likely.get("people", 0) > likely.get("fact", 0)


# a clause that goes on describing a system after a fact ("the model retrains from `events`, and feature
# definitions are in features.yaml"): any noun phrase as its subject, a verb, and more than a word after it
_FACT_NEXT_RE = re.compile(
    rf"^(?:the\s+)?(?P<s>(?!(?:i|i'm|we|we're|you|it|it's|they|he|she|this|that|there|which|who|so|but|or|if|when|"
    rf"please|pls|just|also|then|can|could|would|let's|don't|never|always|only|no|not|nothing|anything|everything|"
    rf"someone|everyone)\b)(?:[\w.+/#`'’-]+\s+){{0,2}}?[\w.+/#`'’-]+)\s+(?:\w+ly\s+)?"
    rf"(?:{_FACT_VERBS}|(?-i:[a-z]+[^s\W]s))\s+(?P<p>\S+\s+\S.*)$", re.I)


_NOT_SUBJECT = frozenset("""the a an for of to in on at with by from still also now just only mostly mainly usually
about around roughly after before while whereas although though because since so and but or then there here""".split())


def _fact_continued(clause: str) -> list[Statement]:
    """A clause after a fact that says more about the system, though alone it would not read as a fact."""
    found = _FACT_NEXT_RE.match(clause.strip(" .;"))
    words = found.group("s").casefold().split() if found else []
    if not found or words[-1] in _WORK_AT_HAND or words[-1].isdigit() or _NOT_SUBJECT & set(words) \
            or _TRANSIENT_RE.search(clause) \
            or _FACT_STATUS_RE.search(clause) or _PASSING_RE.search(clause) or clause.rstrip().endswith("?"):
        return []
    return [Statement(finish(clause), "fact", keyword(found.group("s")), subject=_clean_subject(found.group("s")))]


def _people_continued(clause: str) -> list[Statement]:
    """A clause after a statement about people that says what another named person does, though alone it would
    not read as one ("Ana is our PM and she sets sprint priorities", "Tomasz owns the pipeline and Aisha is doing
    all the figures")."""
    clause = clause.strip(" .;")
    name = subject_person(clause)
    if name is None or _TRANSIENT_RE.search(clause):
        return []
    if not _PEOPLE_NEXT_RE.match(clause[len(name):]):
        return []
    return [Statement(finish(third_person(clause)), "people", name, subject=name)]


# what a person named after another one does: a verb of their own (not one that systems do: "…, and Airflow runs
# the nightly build"), and something it is done to
_PEOPLE_NEXT_RE = re.compile(r"^\s+(?:(?:also|only|usually|always|still|now)\s+)?(?:"
                             r"(?!(?:runs|handles|serves|stores|hosts|triggers|processes|syncs|calls|sends|caches|routes|"
                             r"depends|talks|uses|pulls|pushes|reads|polls|listens|emits|exports|imports|generates|fires|"
                             r"scales|builds|deploys|retries|returns|logs|checks|blocks|fails|breaks)\b)"
                             r"(?-i:[a-z]+(?<!ss)s))\s+(?!(?:it|this|that|to|on|off|out|down|up|fine|ok|okay|"
                             r"well|badly|again)\b)\S", re.I)


_SUBJECT_RE = re.compile(r"\b(?:the|our|my)\s+(?P<s>(?:(?!the\b|our\b|my\b)[\w.+-]+\s+){0,2}?"
                         r"(?:service|app|application|api|project|repo|repository|website|site|backend|frontend|"
                         r"pipeline|cluster|platform|tool|library|cli|bot|database|db|server|system|job|worker|"
                         r"bucket|queue|stack|product|gateway|monorepo))\b", re.I)


def _subject(text: str, match: re.Match[str] | None = None) -> str | None:
    if match is not None and "s" in match.groupdict() and match.group("s"):
        return _clean_subject(match.group("s"))
    found = _SUBJECT_RE.search(text)
    return _clean_subject(found.group("s")) if found else None


def _clean_subject(subject: str) -> str:
    words = subject.strip("`").split()
    while words and words[0].lower() in ("new", "old", "current", "main", "whole", "entire", "all"):
        words.pop(0)
    return " ".join(words).strip(".,;:`")


# -- the clause classifier ----------------------------------------------------------------
# a standing instruction asked as a question ("can you always show me the command before you run it?", "going
# forward can you write the comments in Portuguese?", "don't touch the Bands tab without asking her, ok?")
_STANDING_ASK_RE = re.compile(
    r"^(?P<lead>(?:going forward|from now on)[,:]?\s+)?"
    r"(?:can|could)\s+you\s+(?:please\s+)?(?P<rest>.+?)\s*\?$"
    r"|^(?P<rest2>please\s+(?:always|never|don't|do not)\b.+?)\s*\?$"
    r"|^(?P<rest3>(?:always|never|don't|do not)\b.+?),?\s*(?:ok|okay)\s*\?$",
    re.I,
)


def _asked_for_good(clause: str) -> str | None:
    """The instruction a question asks for from now on, said as one ("Always show me the command before you run
    it"), or None: only with a word that makes it standing ("always", "never", "going forward" …)."""
    asked = _STANDING_ASK_RE.match(clause)
    if not asked or re.search(r"\sor\s", clause):
        return None  # ("always apologetic, or more matter-of-fact?": which one, asked)
    rest = asked.group("rest") or asked.group("rest2") or asked.group("rest3")
    if not (asked.group("lead") or re.match(r"(?:please\s+)?(?:always|never|don't|do not)\b", rest, re.I)):
        return None
    return (asked.group("lead") or "") + rest


def classify_clause(clause: str, hint: str | None = None) -> list[Statement]:
    """The durable statements in one clause (usually none or one), in the order the detectors run."""
    quoted = re.search(r"\s(?:'[^'\"“”]+(?P<q>')|[\"“][^\"'“”]{1,11}(?P<qq>[\"”]))[\s.!…]*$", clause)
    clause = re.sub(r"^[\s\"'“(\[*_]+|[\s\"'”)\]*_]+$", "", clause.strip())
    if quoted:  # (a quote the clause ends with keeps its closing mark: "… start with 'Great question'")
        clause = re.sub(r"[\s.!…,]+$", "", clause) + (quoted.group("q") or quoted.group("qq"))
    # (a longer double-quoted span stays open: whole, it reads as reported speech)
    if clause.count("(") > clause.count(")"):
        clause += ")"  # (the bracket closing an aside at the end went with the quotes and brackets around it)
    if clause.endswith("?"):
        asked = _asked_for_good(clause)
        if asked is None:
            return []
        clause = asked
    clause = re.sub(r"[\s.!…]+$", "", clause)
    clause = re.sub(r"\s*(?:[:;]-?[)(DPp]|[\U0001F300-\U0001FAFF\u2600-\u27BF]+)\s*$", "", clause)
    if len(clause.split()) < 2 or is_negative(clause) or _ASK_FOR_ONE_RE.match(clause):
        return []
    pronouns = _PRONOUNS_ANYWHERE_RE.search(clause)
    if pronouns and _OWN_PRONOUNS_RE.search(clause) and not _THEIR_PRONOUNS_RE.search(clause):
        said = Statement(finish(f"The user's pronouns are {pronouns.group(0)}"), "identity", pronouns.group(0),
                         "pronouns")
        rest = _PRONOUNS_ANYWHERE_RE.sub("", clause).strip(" ,")
        rest = re.sub(r"\s*,\s*,\s*|\bpronouns\b\s*|\((?:used to be|was|formerly|previously)?\s*\)", " ", rest)
        # what introduced them goes with them: "I use they/them now" leaves nothing to say
        rest = re.sub(rf"(?:^|,\s*)(?:{_I}\s+(?:use|go by)|my\s+are)(?:\s+(?:now|these days|nowadays))?\s*$", "",
                      rest.strip(" ,")).strip(" ,")
        others = [s for s in _detect(rest, hint) if s.slot != "pronouns"] if len(rest.split()) >= 2 else []
        return others + [said]
    found = _detect(clause, hint)
    if not found and hint == "preference" and len(clause.split()) <= 8 and not re.match(
            r"^(?:I|i|I'm|i'm|we|we're|it|it's|that|this|there|he|she|they|you|you're|my|our)\b", clause):
        return [Statement(finish(f"The user prefers {clause[:1].lower() + clause[1:]}"), "preference", keyword(clause))]
    if found or hint != "rule" or len(clause.split()) < 4 or re.match(
            r"^(?:I|i|I'm|i'm|we|we're|it|it's|that|this|there|he|she|they|you|you're|when|if|before|after)\b", clause):
        return found
    return [Statement(finish(clause), "rule", keyword(clause, last=True))]


# a set of pronouns said of the person writing: "my pronouns are …", "I use …", "Sam here (they/them)", "she/her btw",
# "Name's Ana, she/her" — not of someone else ("my partner uses she/her", "what are his pronouns?")
_OWN_PRONOUNS_RE = re.compile(r"\b(?:(?i:pronouns?)|I|i|my|me|please|pls|go by|matters|here|(?i:name's|name is)|btw|fyi)\b|"
                              r"^(?:she|he|they|xe|ze)/\w+$", re.I)
_THEIR_PRONOUNS_RE = re.compile(r"\b(?:uses|goes by|prefers|(?<!/)(?:his|her|their)\s+pronouns|\w+['’]s\s+pronouns)\b", re.I)


def _detect(clause: str, hint: str | None) -> list[Statement]:
    for detect in (lambda c: _rule(c, hint), _identity, _personal, lambda c: _decision(c, hint), _preference, _terms,
                   _schedule, _people, lambda c: _fact(c, hint)):
        found = [s for s in detect(clause) if s.text]
        if found:
            return found
    return []


# a request about something at hand ("convert this list …", "fix the header …")
_TASK_START_RE = re.compile(r"^(?:(?:please|pls|can you|could you|now|then|just)\s+)*[a-z]+\s+(?:this|that|these|those|"
                            r"the|it|them)\b", re.I)  # (an instruction it starts, the rules read: "use the repo's …")
_APPOSITIVE_END_RE = re.compile(r"\s(?:the|our|my)\s+(?:[\w-]+\s+){0,2}[\w-]+,\s+(?:(?:Mr|Ms|Mrs|Dr|Prof)\.?\s+)?"
                                r"(?-i:[A-Z])[\w'’-]+(?:\s+(?-i:[A-Z])[\w'’-]+)?$")
_JOINT_RE = re.compile(r"(,\s+(?:and\s+|but\s+|then\s+)?|\s+and\s+|\s+but\s+|\s+—\s+)")
_SUBJECTLESS_RE = re.compile(r"^(?:been (?:learning|playing)\b|speak(?!\s+(?:with|to)\b)|live in|based in|originally from|work (?:at|for|as)|working (?:at|for)|love|hate|"
                             r"(?:don't|dont|do not) (?:really )?(?:love|like|enjoy)|"
                             r"adore|not a (?:big |huge )?fan of|not (?:really )?into|"
                             r"big fan of|mostly|usually|mainly|primarily|can't stand)\b", re.I)
_PRONOUN_RE = re.compile(r"^(?:he|she)(?:'s|’s)?\b(?!/)", re.I)  # (not "she/her": pronouns, no subject)
_PRONOUN_VERB = {"'s": " is", "’s": " is", " is": " is", "'re": " are", "’re": " are", " are": " are"}
_THING_PRONOUN_RE = re.compile(r"^(?:it|they)(?P<v>'s|’s|'re|’re| is| are)?(?=\s)", re.I)
_TRAILER_RE = re.compile(r"(?:[\s,]+(?:lol|lmao|haha+|tbh|imo|imho|fwiw|ha|heh|xd|:\)|:d|;\)|🙂|😅|🙏|👍|thx|"
                         r"thanks|ty|though|anyway|anyways|btw|fyi|as well|too|no exceptions|ever|period))+$", re.I)


def _mostly(clause: str) -> list[Statement]:
    """What the person mostly works with, said without a subject ("mostly python these days", "mainly in Go");
    empty for anything longer than a few words."""
    found = re.match(r"^(?P<how>mostly|usually|mainly|primarily)\s+(?:with\s+|in\s+|(?P<on>on)\s+)?(?P<x>.+?)"
                     r"(?:\s+(?:these days|nowadays|lately|every ?day))?$", clause, re.I)
    if not found or len(found.group("x").split()) > 5:
        return []
    what = found.group("x")  # ("mostly on NEC4 contracts": works on them)
    return [Statement(finish(f"The user {found.group('how').lower()} works {'on' if found.group('on') else 'with'} "
                             f"{what}"), "preference", keyword(what))]


# "what I really can't stand is 200-char lines": said of the thing, the way "I can't stand 200-char lines" is
_WHAT_I_RE = re.compile(rf"^(?:[^,]*,\s*)?what\s+(?P<s>{_I}{_ADV}\s+(?:\S+\s+){{0,2}}?(?:prefer|like|love|enjoy|hate|dislike|stand|"
                        r"bear))\s+(?:is|are)\s+(?P<x>.+)$", re.I)


def _statements(clause: str, hint: str | None) -> list[Statement]:
    """A clause's statements; a clause that gives none alone may hold a first-person one further in."""
    what = _WHAT_I_RE.match(clause)
    if what:
        clause = f"{what.group('s')} {what.group('x')}"
    found = classify_clause(clause, hint)
    if found:
        return found
    inner = re.search(r"(?:^|\s)(?<!if )(?=(?:I|i)(?:'m|’m|'d|’d|'ve)?\s+(?:(?:always|usually|generally|really|mostly|"
                      r"also|still|strongly|much)\s+)?(?:prefer|like|love|hate|can't stand|"
                      r"would rather|'d rather|rather|work|live|speak|am|'m|use|charge)\b)", clause)
    if inner and inner.start() > 0:
        found = classify_clause(clause[inner.start():].strip(), hint)
        scope = clause[:inner.start()].strip(" ,")
        if re.match(r"(?:for|in|on|with|when|at|during|outside)\s", scope, re.I) and len(scope.split()) <= 6:
            # "For travel I always prefer trains": the preference holds for travel
            found = [replace(st, text=f"{scope[0].upper()}{scope[1:]}, {st.text[0].lower()}{st.text[1:]}")
                     if st.text.startswith("The user ") else st for st in found]
        return found
    return []


def _thing_phrase(text: str) -> str | None:
    """The noun phrase a fact is about ("search cluster" of "The search cluster is Elasticsearch 7.17.")."""
    found = re.match(rf"^(?:the |our |my )?(?P<np>(?:[\w.+/#'’`-]+\s+){{0,4}}?[\w.+/#'’`-]+)\s+{_FACT_VERBS}\b", text, re.I)
    if found is None or re.match(r"^(?:we|i|you|they|it|he|she|their|his|her|its)\b", found.group("np"), re.I):
        return None
    thing = re.sub(rf"(?:\s+{ADVERBS})+$", "", found.group("np"), flags=re.I)  # ("the legacy monolith still is …")
    named = re.match(r"\s*(?:(?:is|are)\s+)?(?:called|named)\s+(?P<n>\S+)|\s*(?:is|are)\s+"
                     r"(?P<id>`?(?=[\w./-]*[A-Za-z])[\w.-]*[._/][\w./-]+`?)(?=\W*$|\s+and\b|,)", text[found.end("np"):])
    if named:  # "Our cluster is called Hábrók", "the labels table is ml.labels_v4": what "it" is has a name
        return f"{thing} {(named.group('n') or named.group('id')).rstrip('.,')}"
    return thing


def _COLLEAGUE_NAME(text: str) -> str | None:
    found = _COLLEAGUE_RE.match(text)
    return found.group("n") if found else None


# "her"/"him" as the object of an instruction ("loop her in", "talk to him before …"), not "her team"
_OBJECT_PRONOUN_RE = re.compile(r"\b(?:him|her(?=\s+(?:in|on|up|about|for|with|to|when|if|before|after|first|"
                                r"directly|know|out|anything)\b|\s*[,.;!]|\s*[^\w\s]*\s*$))\b", re.I)  # (an emoji may end it)


# "needs his review", "her sign-off is required": whose say it is, the person named before
_SAY = r"(?:review|sign-?off|approval)"  # what a person gives that a change needs
_APPROVAL_OF_RE = re.compile(rf"\b(?:his|her)\s+(?={_SAY}\b)", re.I)


def _named(clause: str, person: str | None) -> str:
    """``clause`` with an object "her"/"him", or a "Her"/"His" it starts with, as the person the message last
    named (a record must stand alone: "Her team ships on Fridays" → "Priya's team …")."""
    if not person:
        return clause
    clause = re.sub(r"^(?:her|his)\s+(?=[a-z])", _as_said(f"{person}'s "), clause, flags=re.I)
    clause = _APPROVAL_OF_RE.sub(_as_said(f"{person}'s "), clause)
    return _OBJECT_PRONOUN_RE.sub(_as_said(person), clause)


def _as_said(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement that puts ``text`` in as it was written: words taken from the message are no template (a name
    read in a pasted "C:\\Program Files\\…" has a backslash that re.sub would read as an escape)."""
    return lambda _match: text


_HERE_ON_RE = re.compile(r"\b(f)rom here on(?: out)?\b", re.I)
_EVER_RE = re.compile(r"^(?:please\s+)?(?:don't|do not|dont|don’t)\s+(?P<what>.+?),?\s+ever(?: again)?[.!]?$", re.I)


def _named_in_clause(clause: str, person: str | None) -> str:
    """A clause's "her"/"him" as ``person`` (named in an earlier sentence) — but not as the clause's own subject:
    "Nadia took over from him" is someone else; past a comma, :func:`_pieces` names it ("Giulia is our designer,
    loop her in")."""
    subject = subject_person(clause)
    if subject is None:
        return _named(clause, person)
    if not person or subject.startswith(person) or person.startswith(subject):
        return clause
    head, sep, tail = clause.partition(", ")
    return _named(head, person) + sep + tail


# the verbs a clause after "and" may start with that carry the subject over ("I'm left-handed and use …"); any
# other word is a second object ("I work with Airflow and dbt", "allergic to penicillin and shellfish")
_VERB_RE = re.compile(r"^(?:(?:also|still|usually|mostly|often|always|never|sometimes|just|really|now)\s+)*"
                      r"(?:am|have|has|had|do|did|use|used|work|worked|live|lived|speak|spoke|love|like|hate|prefer|"
                      r"enjoy|run|ran|lead|led|manage|managed|own|owned|write|wrote|build|built|ship|shipped|go|went|"
                      r"play|played|make|made|need|needed|want|wanted|can|can't|cannot|will|won't|would|should|"
                      r"don't|dont|do not|get|got|keep|kept|take|took|teach|taught|study|studied|help|helped|"
                      r"moved|move|switched|switch|joined|join|left|started|start|report|reported|maintain|"
                      r"maintained|[a-z]+ed|[a-z]+ing)\b", re.I)


def _names_something(text: str) -> bool:
    """Whether ``text`` names a thing: a proper or product name, code, a path, a version or a number."""
    return bool(_CONCRETE_RE.search(" " + text) or re.search(r"\b[a-z]+[A-Z]\w*|\d", text))


# a clause with a named subject and its verb ("On my ward Sister Adaeze does the rota")
_OWN_CLAUSE_RE = re.compile(r"^(?:(?i:on|at|in)\s+(?:my|our|the)\s+\w+,?\s+)?(?:[A-Z][\w'’.-]+\s+){1,3}(?-i:[a-z]+s)\b")
_BARE_SUBORDINATE_RE = re.compile(r"^(?:(?:going forward|moving forward|from now on|in (?:the )?future),?\s+)?"
                                  r"(?:when|whenever|if|before|after|once|unless|while|until)\b[^,;]*$", re.I)
_DAY_END_RE = re.compile(rf"\b(?:{lx.DAYS}|{lx.MONTHS})s?$", re.I)
_DAYS_ONLY_RE = re.compile(rf"(?:{lx.DAYS})s?(?:\s+to\s+(?:{lx.DAYS})s?)?(?:\s+(?:at\s+)?(?:{lx.CLOCK_RE.pattern}))?", re.I)
_DAY_START_RE = re.compile(rf"^(?:{lx.DAYS}|{lx.MONTHS})s?\b", re.I)


# the gathering a person runs ("Hana runs the ML reading group"): what a following "it" is
_RUNS_EVENT_RE = re.compile(r"\b(?:runs|leads)\s+the\s+(?P<e>(?:[\w-]+\s+){0,3}?(?:group|"
                            r"meeting|standup|review))\b", re.I)


def _pieces(clause: str, hint: str | None) -> list[tuple[str, list[Statement]]]:
    """``clause`` cut at commas and "and"/"but" only where both sides stand as statements on their own."""
    parts = cut_outside_quotes(_JOINT_RE, clause)
    out: list[tuple[str, list[Statement]]] = []
    continued: dict[str, list[Statement]] = {}  # pieces that stand as facts only after a fact
    current = parts[0]
    for sep, nxt in zip(parts[1::2], parts[2::2]):
        if WHEN_FIRST_RE.fullmatch(current.strip()):
            current = current + sep + nxt  # "On Fridays, we deploy at noon": the time of what follows
            continue
        if sep.strip(", ") == "and" and _DAY_END_RE.search(current) and _DAY_START_RE.match(nxt):
            current = current + sep + nxt  # "my swim class is Tuesdays and Thursdays at 7am": one list of days
            continue
        if sep.strip() == "and" and re.match(rf"^(?:{_I}|{_IM})\b", current) and re.match(
                r"^(?!(?:always|never|please)\b)[a-z]+\b", nxt):
            head = re.match(rf"^(?:{_IM}|{_I})(?:\s+(?:have|own|speak|love|like|hate|prefer|use))?\b", current)
            carried = head.group(0) if head and (
                re.match(r"^(?:a|an|the|two|three|four|five|\d+|my|some)\b", nxt)
                or re.fullmatch(_IM, head.group(0)) and re.match(rf"^(?:still|also|currently|in|at|from|based|on|{_TRAITS}|"
                                                                 r"retired|married)\b", nxt)
            ) else "I"
            # "I'm left-handed and use …", "I have two kids and a dog", "I'm 17 and still in school", "I'm vegan and
            # allergic to sesame", "I'm 64 and retired": subject (and verb)
            employer = r"\b(?:at|for|with)\s+[A-Z]"
            if carried != "I" and re.search(employer, nxt) and not re.search(employer, current):
                current = current + sep + nxt  # "co-founder and the only engineer at Lumen": both at Lumen
                continue
            if carried == "I speak":
                current = current + sep + nxt  # "I speak Portuguese, Spanish and a bit of Mandarin": one list
                continue
            if carried == "I" and not _VERB_RE.match(nxt):
                current = current + sep + nxt  # "I work with Airflow and dbt every day": a second object, no verb
                continue
            nxt = f"{carried} {nxt}"
        if sep.strip() == "," and re.match(rf"^(?:{_I}|{_IM})\b", current) and re.match(
                r"(?:currently\s+)?working\s+(?:at|for)\s", nxt):
            nxt = f"I'm {nxt}"  # "I'm a contractor, currently working for Helix Bank": the same I
        if sep.strip(", ") == "and" and re.match(r"(?:on|at|every|each|during)\s+(?:the\s+)?(?:(?:first|last|second|third|"
                                                 rf"fourth|\d+\w*|other|next)\b|(?:{lx.DAYS})s?\b)", nxt, re.I) and not re.search(
                r"\b(?:we|i|you|they|he|she|it|there)\b", nxt, re.I):  # (no subject of its own: "…, and on Mondays we …")
            current = current + sep + nxt  # "payroll runs on the 15th and on the last business day": one schedule
            continue
        if sep.strip(", ") == "and" and lx.CLOCK_RE.match(nxt):
            current = current + sep + nxt  # "gets insulin at 8am and 8pm every day": two times of one schedule
            continue
        if _DAYS_ONLY_RE.fullmatch(nxt.strip(" .")):
            current = current + sep + nxt  # "I work from my studio in Ghent, Tuesday to Saturday": when, not a record
            continue
        if sep.strip(", ") == "and" and re.match(r"(?:onto|into|to|from|off|over to)\s", nxt, re.I):
            current = current + sep + nxt  # "moving the queue off Celery and onto Dramatiq": one move
            continue
        if re.match(r"^(?:never|always|only|not)\s+(?:the|a|an|our|my|its|their|on|in|at|for|from|by|through|via|"
                    r"inside|outside|with|to|into|directly)\b", nxt, re.I):
            current = current + sep + nxt  # "talks to a replica, never the primary": no verb of its own
            continue
        if sep.strip() == "," and _APPOSITIVE_END_RE.search(current) and re.match(rf"(?:{_FACT_VERBS})\s", nxt):
            current = current + sep + nxt  # "…, and the head teacher, Mrs. Chaudhry, is the only one with edit access":
            continue  # what is, is the one named
        gap = _ungapped(current, nxt)
        nxt = gap or nxt
        it = _THING_PRONOUN_RE.match(nxt)
        if it or not gap and sep.strip(", ") in ("and", "") and re.match(rf"^(?:{_FACT_VERBS}|(?-i:[a-z]+[^s\W]s))\s", nxt) and \
                not _RULE_LEAD_RE.match(nxt):  # ("…, never quote lower than that": an instruction, not more of the fact)
            thing = next((_thing_phrase(st.text) for st in _statements(current, hint) if st.kind == "fact"), None)
            run = _RUNS_EVENT_RE.search(current) if it and not thing and (
                _SOME_TIME_RE.search(nxt) or lx.RECURRENCE_RE.search(nxt) or lx.CLOCK_RE.search(nxt)) else None
            if run:
                thing = run.group("e")  # "Hana runs the ML reading group, it's every other wednesday": the group
            if thing and it:  # "the warehouse is Snowflake, it's refreshed by dbt"
                nxt = f"the {thing}{_PRONOUN_VERB.get(it.group('v') or '', '')}{nxt[it.end():]}"
            elif thing:  # "the checkout service is written in Go and owns the orders table"
                nxt = f"the {thing} {nxt}"
        kin = list(_KIN_NAME_RE.finditer(current))  # ("… with my wife Lucia, she does the editing": Lucia)
        first = _statements(current, hint)
        person = (_asked_person(current) if _rule(current, hint) else subject_person(current)) or \
            _COLLEAGUE_NAME(current) or (kin[-1].group("n") if kin else None)
        pronoun = _PRONOUN_RE.match(nxt)
        if person and pronoun:
            nxt = _named_subject(person, pronoun, nxt)
        elif pronoun and (named := next((st.subject for st in first if st.kind == "people" and st.subject), None)) \
                and not _statements(nxt, None):
            said = _named_subject(named, pronoun, nxt)  # "My manager is Siobhán, she signs off …": whom the first
            nxt = said if _statements(said, None) else nxt  # part names, when only then what she does reads alone
        nxt = _named(nxt, person)
        first = first or continued.get(current, [])
        alone = _statements(nxt, None if first and (hint == "rule" or hint == "decision" and _NOT_A_CHOICE_RE.match(
            nxt)) else hint)  # a reason after a rule is no rule; after a decision, "not Auth0", "starting after
        # Easter" and what already happened ("Ngozi's team already tested it") are more of it, not a second one
        if not first and sep.strip() == "and" and alone and all(st.kind == "rule" for st in alone) and \
                _TASK_START_RE.match(current) and not _ALWAYS_RULE_RE.search(nxt):
            alone = []  # "convert this list to a table and sort by date please": more of the task at hand
        if first and re.match(r"^(?:just\s+)?in case\b", nxt, re.I):
            out.append((current, first))  # "I'm allergic to shellfish, in case you suggest venues": why it was said
            current = nxt
            continue
        if first and first[-1].kind in ("people", "fact") and re.match(
                r"^(?:ask|check|don't|never)\b|^(?:add|install)\s", nxt, re.I):
            # "Achieng handles the feature store, ask me before assuming anything about it", "The prod DB is on RDS,
            # never run migrations on it by hand": "it" is what she handles, what the fact is about; an instruction
            # that says no more is not said of her ("ask them before …")
            thing = _thing_phrase(first[-1].text) if first[-1].kind == "fact" else None
            if thing:
                thing = f"the {thing}"
            elif first[-1].kind == "people":
                found = re.search(r"\s(?P<o>(?:the|our|my)\s+(?:[\w.+-]+\s+){0,3}?[\w.+-]+)\W*$", current)
                thing = found.group("o") if found else None
            said = re.sub(r"\bit\b", thing, nxt, count=1) if thing else nxt
            resolved = _statements(said, "rule") if said != nxt else []
            if resolved:
                nxt, alone = said, resolved
            elif not alone:
                out.append((current, first))
                current = nxt
                continue
        if not alone and first and first[-1].kind == "fact":
            alone = continued[nxt] = _fact_continued(nxt)  # "…, and feature definitions are in features.yaml"
        elif not alone and first and first[-1].kind == "people":
            alone = continued[nxt] = _people_continued(nxt)
        if alone and first and first[-1].kind == "decision" and not _names_something(nxt) and all(
                st.text.startswith("We decided: ") for st in alone):
            alone = []  # "we're replacing rabbitmq with SQS, lower ops burden": the reason, not a second choice
        subordinate = re.match(r"^(?:when|whenever|if|before|after|once|unless|while|until)\b", current, re.I) \
            and "," not in sep
        verb_only = first and first[-1].kind == "people" and re.match(
            r"^(?:(?:only|always|never|also|just|still|usually)\s+)?(?!(?:always|this|thus|yes|its|his|hers|ours|theirs)\b)"
            r"(?-i:[a-z]+s)\b", nxt)  # "My manager, Tom, only approves …": the verb of the person just named
        if "," in sep and _BARE_SUBORDINATE_RE.match(current):
            first = []  # "Going forward, when I ask for a workout, always include …": the condition of what follows
        if alone and not subordinate and (first or pronoun and person) and not verb_only and not _continues(first, alone, nxt):
            out.append((current, first))
            condition = _rule_condition(current) if all(st.kind == "rule" for st in first + alone) else None
            current = condition + nxt if condition else nxt  # "When you draft emails, keep them short, and sign off
            # with my first name": both when drafting emails
        elif alone and not first and not subordinate and sep.strip(", ") == "and" and _OWN_CLAUSE_RE.match(current):
            out.append((current, []))  # "Sister Adaeze does the rota and Dr. Farouk is …": a clause of its own (what the
            # classifier reads in it), not the start of the next
            current = nxt
        else:
            current = current + sep + nxt
    out.append((current, _statements(current, hint) or continued.get(current, [])))
    return out


def _ungapped(fact: str, part: str) -> str | None:
    """``part`` with the verb that ``fact`` said once for both ("Logs go to Loki, metrics to Prometheus": "metrics go
    to Prometheus"); None when ``part`` is no such part."""
    said = re.match(rf"^(?:the\s+|our\s+)?[\w.-]+(?:\s+[\w.-]+)?\s+(?P<v>{_FACT_VERBS}(?:\s+\w+(?:ed|en))?)\s+"
                    r"(?P<p>to|in|on)\s", fact, re.I)
    gap = re.match(rf"^(?P<s>(?:the\s+)?[\w.-]+(?:\s+[\w.-]+)?)\s+(?={said.group('p')}\s+\S)", part) if said else None
    if said is None or gap is None or re.search(rf"\b{_FACT_VERBS}$", gap.group("s"), re.I):
        return None
    return f"{gap.group('s')} {said.group('v')} {part[gap.end():]}"


def _continues(rules: list[Statement], more: list[Statement], said: str) -> bool:
    """Whether a second instruction only finishes the first: "always relative paths, never absolute", "don't
    abbreviate names, spell them out", "don't slap a retry on it — mark it flaky instead", "use pnpm, never npm or
    yarn"; or a "never X" with no verb of its own finishes whatever came first ("we use Postgres with pgx, never
    GORM": no rule "Never GORM." alone)."""
    if not all(s.kind == "rule" for s in more):
        return False
    return bool(all(s.kind == "rule" for s in rules) and (
        len(said.split()) <= 3 or re.search(r"\b(?:it|them|those|these|instead)\b", said, re.I))
        or re.match(r"^(?:never|not|no)\s+(?!(?:\w+\s+){0,5}?(?:use|run|push|commit|add|write|touch|edit|delete|change|"
                    r"call|merge|deploy|install|put|make|ask|send|open|create|remove|rename|print|log)\b)(?:\S+\s*){1,5}$",
                    said, re.I))  # "use pnpm, never npm or yarn": no verb of its own


# a decision that drops something ("we're not doing X", "Y is out", "scratch that"): the decision right after it that
# drops nothing is what replaces it ("we're ditching Jenkins. GitHub Actions for everything"), one change of mind;
# two decisions that each stand alone ("we're moving CI to Actions. dropping Windows 7 in the next major") stay two
_DROP_RE = re.compile(r"\b(?:not|no longer|off the table|ditch(?:ed|ing)?|drop(?:s|ped|ping)?|changed (?:my|our) minds?|"
                      r"scratch|forget|kill\w*|won't|dead|cancel\w*|is out|reverse)\b", re.I)
_IS_OUT_RE = re.compile(r"[^\s;,]+(?: [^\s;,]+)? is out\.$")  # "We're going with Lucide. Heroicons is out."


def _join_changes(statements: list[Statement]) -> list[Statement]:
    """Adjacent decisions of one message where one drops what the other replaces become one change of mind."""
    out: list[Statement] = []
    for statement in statements:
        last = out[-1] if out else None
        if last is not None and last.kind == "decision" and _REPLACEMENT_RE.match(statement.text) and (
                _dropped(last.text) or statement.kind == "rule" and not _OUTLIVES_RE.search(statement.text)):
            # ("let's go with option B — keep the polling approach, no websockets": what was decided, no rule)
            # "we've ditched Heroku. everything is on Fly.io now", "let's not use GraphQL, stick with REST": what
            # replaces the dropped thing belongs to the decision, not to a fact or rule of its own
            statement = Statement(statement.text, "decision", statement.keyword)
        if (last is not None and last.kind == statement.kind == "decision"
                and (_DROP_RE.search(last.text) and not _DROP_RE.search(statement.text)
                     or _IS_OUT_RE.match(statement.text))):
            second = statement.text[:1].lower() + statement.text[1:] if not re.match(
                r"^[A-Z][a-z]*[A-Z]|^[A-Z]{2}", statement.text) else statement.text
            out[-1] = Statement(finish(last.text.rstrip(".") + "; " + second), "decision", last.keyword,
                                old=last.old or statement.old or _dropped(last.text) or _dropped(statement.text),
                                subject=last.subject or statement.subject)
            continue
        out.append(statement)
    return out


# what a dropped thing's replacement reads like right after it: "Stick with REST.", "Everything is on Fly.io now."
_REPLACEMENT_RE = re.compile(r"^(?:stick with|go with|keep|use|switch to|move to|everything(?:'s| is) (?:on|in)|"
                             r"it's|we're on|we use|we'll use)\b.*?(?:\bnow\b.*)?$|^.*\binstead\b", re.I)


def _dropped(text: str) -> str | None:
    found = re.search(r"\b(?:not (?:moving to|adopting|using|use|switching to)|ditched|dropped|dropping|off|out)\s+"
                      r"(?P<v>[A-Z`][\w.+#`-]*)", text) or re.search(r"(?P<v>[A-Z`][\w.+#`-]*)\s+(?:is out|is off)", text)
    return found.group("v").strip("`") if found else None


def extract_statements(text: str) -> list[Statement]:
    """Durable statements in one message of the person's, in order, without repeats."""
    return _join_names(_join_changes(_extract(text)))


_NAMED_RE = re.compile(r"^The user's name is (?P<n>[^;]+)\.$")


def _join_names(statements: list[Statement]) -> list[Statement]:
    """A second name in one message is the name the person goes by ("my name is Oleksandr but everyone calls me
    Sasha"): one name record holds both, and "use Sasha" after it says nothing more."""
    out: list[Statement] = []
    named: list[str] = []
    for statement in statements:
        found = _NAMED_RE.match(statement.text) if statement.slot == "name" else None
        if found and named:  # (the same name twice is one statement already)
            first = next(i for i, s in enumerate(out) if s.slot == "name")
            out[first] = replace(out[first], text=f"The user's name is {named[0]}; they go by {found.group('n')}.")
            named.append(found.group("n"))
            continue
        if found:
            named.append(found.group("n"))
        use = re.fullmatch(r"use\s+(?P<n>.+?)\.", statement.text, re.I)
        if statement.kind == "rule" and use and use.group("n").casefold() in (n.casefold() for n in named):
            continue
        out.append(statement)
    return out


# "Role: staff engineer at Initech", "My timezone: CET": a profile field, read as the sentence it stands for
_FIELD_RE = re.compile(r"^(?P<my>my\s+)?(?P<f>name|role|title|job title|job|position|employer|company|location|city|"
                       r"based in|timezone|time zone|tz|pronouns)\s*:\s*(?P<v>[^:]{2,80}?)[.!]?$", re.I)
_FIELD_SENTENCE = {"name": "My name is {}", "employer": "I work at {}", "company": "I work at {}",
                   "location": "I live in {}", "city": "I live in {}", "based in": "I'm based in {}",
                   "timezone": "My timezone is {}", "time zone": "My timezone is {}", "tz": "My timezone is {}",
                   "pronouns": "My pronouns are {}"}


def _field(sentence: str) -> str:
    found = _FIELD_RE.match(sentence)
    if found is None:
        return sentence
    field, value = found.group("f").casefold(), found.group("v").strip()
    # a profile line ("Role: Staff engineer", "my role: staff engineer"), not a config key ("role: admin")
    if not found.group("my") and not (found.group("f")[:1].isupper() and (value[:1].isupper() or field == "pronouns")):
        return sentence
    if field in ("location", "city", "based in") and not (value[:1].isupper() and len(value.split()) <= 5):
        return sentence
    if field in _FIELD_SENTENCE:
        return _FIELD_SENTENCE[field].format(value)
    article = "" if re.match(r"(?:an?|the)\s", value, re.I) else ("an " if value[:1].lower() in "aeiou" else "a ")
    return f"I'm {article}{value}"  # role, title, job, position


# a greeting set off by punctuation ("Hey, Mehdi … here", "Hiya — Ana, …"; "Hi Priya," greets Priya), or a label
_GREETING_RE = re.compile(r"^(?:(?P<hi>(?:hi|hey|hello|hiya|yo|morning)\s*[,!.—–-]+)\s*|"
                          r"(?:quick\s+|short\s+)?(?:intro(?:duction)?|about me)\s*[:—–-]\s*)", re.I)
_BARE_GREETING_RE = re.compile(r"^(?:hi|hey|hello|hiya|yo|morning|(?:quick\s+|short\s+)?intro(?:duction)?"
                               r"(?:\s+(?:since|as)\s[^:]*)?)\W*$", re.I)  # ("Quick intro since it's a new chat —")


def _introduction(sentence: str, greeted: bool) -> list[Statement] | None:
    """A self-introduction without "I'm": "Siobhán here, SRE at Contoso", "Quick intro: Lars, CTO at …"; None
    when ``sentence`` is not one. Call it with a message's first sentence only (``greeted``: a bare "Hiya" came
    before it)."""
    greeting = _GREETING_RE.match(sentence)
    greeted = greeted or greeting is not None
    rest = sentence[greeting.end():] if greeting else strip_lead(sentence)[0]  # ("quick intro since this is a new
    # session: Giulia here, …")
    rest = re.sub(r"^name(?:'s|’s)\s+", "", rest, flags=re.I)  # ("Hello! Name's Yuki Tanaka, …")
    name = leading_name(rest)
    if name is None:
        return None
    after = rest[len(name):].lstrip(",").strip().rstrip(".!")
    here = re.match(r"^(?:(?P<from>from .+?)\s+)?here\b[\s,]*", after, re.I)
    if here:
        parts = [here.group("from") or "", after[here.end():]]
    elif greeted and after and rest[len(name):].startswith(","):  # "Quick intro: Lars, CTO at …", "Hiya — Ana, …"
        parts = [after]
    else:
        return None
    out = [Statement(finish(f"The user's name is {name}"), "identity", name, "name")]
    for part in parts:
        for piece in re.split(r"\s*,\s*", part):
            out.extend(_appositive(piece))
    if here and not greeted and len(out) == 1 and after[here.end():].strip(" ,.!:"):
        return None  # "Anyway here, the tests pass", "Update here: …": a word, not a name ("Ravi here." and
        # "hi, Ravi here, quick question" are introductions; so is "Ravi here, SRE at Contoso")
    return out


def _extract(text: str) -> list[Statement]:
    return [statement for _sentence, found in extract_by_sentence(text) for statement in found]


# what makes an instruction outlive the task it came with: a word of time or scope ("from now on", "any new …")
_OUTLIVES_RE = re.compile(
    r"\b(?:always|never|ever|whenever|every time|from now on|going forward|moving forward|in (?:the )?future|"
    r"by default|as a rule|at all times|in general|generally|no matter|standing|rules?|policy|convention|"
    r"for (?:any|all|every)|(?<!add )any new|all new|(?:anything|everything) (?:touching|under|that|related|about)|"
    r"all (?:my|our)|every \w+|each \w+|"
    r"(?<!the )(?<!this )(?<!that )(?<!any )(?<!add )(?:new|future) \w+|default|no more|only|unless|stop|when(?:ever)? you|if you|"
    r"in (?:this|that|our|my) (?:repo|codebase|project)s?|across)\b", re.I)
# where a reason starts after an instruction ("keep it short, he never reads past the first line"): its words
# of time are not the instruction's
_REASON_RE = re.compile(r"(?:,|\s+—|\s+-)\s+(?:(?:because|since|as|cause|cuz)\s+)?(?:he|she|they|it|that)\b|"
                        r"\s+(?:because|since|cause|cuz)\s+", re.I)
# a sentence that hands the agent a task ("can you …", "fix …", "rename …", a question)
_TASK_RE = re.compile(
    r"^(?:can you|could you|would you|pls|please|kindly|fix|refactor|add|update(?!\s+(?:from|on)\b)|write|make|"
    r"help|look at|check|rename|"
    r"change|move|remove|delete|implement|review|debug|figure out|find|investigate|set up|create|generate|draft|"
    r"run|do|go|try|start|continue|proceed|let's|open|search|translate)\b", re.I)


def _task_constraints(groups: list[tuple[str, list[Statement]]]) -> list[tuple[str, list[Statement]]]:
    """``groups`` without the instructions that only constrain the task the same message hands over: next to
    "can you refactor calculate_total", "don't commit" and "keep the signature the same" are for this task
    (and the core is injected into every session)."""
    if not any(not found and (_TASK_RE.match(strip_lead(sentence)[0]) or sentence.rstrip().endswith("?"))
               for sentence, found in groups):
        return groups
    return [(sentence, found if _OUTLIVES_RE.search(_REASON_RE.split(sentence)[0]) or strip_lead(sentence)[1] == "rule"
             else [s for s in found if s.kind != "rule"]) for sentence, found in groups]


_FIRST_PERSON_RE = re.compile(r"\b(?:I|I'm|I’m|my|My|me)\b|(?<![\w'’.-])i(?:'m|’m)?(?![\w'’.-])")


def _named_subject(person: str, pronoun: re.Match[str], clause: str) -> str:
    """``clause`` with its leading "he/she" (``pronoun``) replaced by ``person``: "she's decided" → "Ana has
    decided", "she's strict" → "Ana is strict", "he'll review" → "Tom will review"."""
    rest = clause[pronoun.end():]
    rest = re.sub(r"^['’]ll\b", " will", re.sub(r"^['’]d\b", " would", rest))
    if pronoun.group(0)[-2:] in ("'s", "’s"):
        # ("she's based in Oslo", "he's married": a state, said with "is")
        done = re.match(r"\s+(?:(?:already|just|also|now|finally)\s+)?(?:(?!(?:based|located|married)\b)\w+ed|been|got|gone|made|taken|left|done|"
                        r"had|built|written|seen|become)\b", rest)
        rest = (" has" if done else " is") + rest
    return re.sub(r"['’]s$", "", person) + rest  # ("Doreen's the one laying it out and she …": Doreen)


# a rule that leans on what it does not say: a possessive with nothing after it (the emoji it stood before is
# dropped), "keep that in mind", "… then" (what "that" is, when "then" is, the clause before said), "no
# exceptions unless …" (to what?), "that's who I'd ask" (who?)
_DANGLING_RULE_RE = re.compile(r"\b(?:his|my)\W*$|\bthen\W*$|^no\s+exceptions\b|\bthat's\s+who\b|\bon\s+that\s+day\b", re.I)
# "I don't have any (and the shops are shut)": any of what, the question before said
_ANY_OF_IT_RE = re.compile(r"\bhave\s+any\b(?=\s+and\b|\s*[,.;])", re.I)
# "keep it plain", "never rush this bit", "don't mix": a rule whose object is "it"/"this"/"that" or nothing at all
# means nothing on its own ("them" after a plural is resolved, below; "keep it short" is about the answers; "never
# call it 'the monolith'" names what it is)
_ANAPHOR_RULE_RE = re.compile(r"^(?:(?:never|always|don'?t|do\s+not|just)\s+)*(?!call\b)\w+\s+(?:it|this|that)\b"
                              r"(?!\s+(?:short|brief|concise|simple)\W*$)|^(?:don'?t|do\s+not)\s+\w+\W*$|"
                              r"^(?:keep an eye on|watch out for|look out for|be careful with|stay on top of)\s+(?:it|this|that)\b",
                              re.I)  # ("keep an eye on that going forward": on what, the turn before said)
# an instruction said to hold from now on, not for the step at hand ("use it for every new package from now on")
_FOR_GOOD_RE = re.compile(r"\b(?:from now on|going forward|moving forward|in (?:the )?future|by default|"
                          r"for (?:every|each|any|all) new)\b", re.I)
_COURTESY_RE = re.compile(r"\bprefers?\s+not\s+to\s+say\W*$|^always\s+happy\s+to\b", re.I)
_AWAY_RE = re.compile(rf"\bis\s+out\s+(?:till|until)\s+(?:{lx.DAYS})\b", re.I)
_REPORT_BACK_RE = re.compile(r"\band\s+(?:tell|show|paste)\s+me\b", re.I)
_KEEP_IN_MIND_RE = re.compile(r"\bkeep\s+that\s+in\s+mind\b", re.I)  # (whatever kind it was read as)
# "…, please bear that in mind when you book calls" after a fact: the request, not part of the fact (a "keep that
# in mind" after a comma is a clause of its own already)
_MIND_TAIL_RE = re.compile(r",?\s*(?:please\s+|pls\s+)?bear\s+(?:that|this)\s+in\s+mind\b.*$", re.I)


# "anything touching refunds needs Dmitri Volkov's review": what a named person has a say over
_SAY_OF_RE = re.compile(rf"\b(?P<n>[A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)'s\s+{_SAY}\b")


def _without_mind_tail(statement: Statement) -> Statement:
    if statement.kind == "rule":
        return statement
    cut = _MIND_TAIL_RE.sub("", statement.text)
    return statement if cut == statement.text else replace(statement, text=finish(cut))


# an instruction's second one after "and": "use imperative mood and keep the subject under 50 chars"
_DO_VERBS = r"(?:use|keep|write|add|run|put|include|quote)"
_AND_DO_RE = re.compile(rf"\s+and\s+(?={_DO_VERBS}\s+(?!it\b)\S+\s+\S)",
                        re.I)
# where the instruction starts after a condition said without a comma ("when you write commit messages use …")
_DO_AT_RE = re.compile(rf"(?<!\byou\s)(?<!\bu\s)(?<!\bI\s)\b(?:always\s+|never\s+)?{_DO_VERBS}\b", re.I)


def _rule_condition(rule: str) -> str | None:
    """The condition said at the start of an instruction, with the comma or space after it ("Going forward, when you
    help with my lesson plans, "); "" when there is none, None when where it ends cannot be told."""
    said = re.match(r"^(?:(?:going forward|from now on),?\s+)?(?:when(?:ever)?|if|for|any\s*time)\b", rule, re.I)
    if not said:
        return ""
    comma = rule.find(", ", said.end())
    verb = _DO_AT_RE.search(rule, said.end())
    cut = comma + 2 if comma > 0 else verb.start() if verb else -1
    return rule[:cut] if cut > 0 else None


# what ends a list of things to give rather than starting an instruction of its own: "report peak stress, its
# location, and the allowable it's compared against" (a part with a verb is one: "…, and our bank details go last")
_LAST_ITEM_RE = re.compile(r"(?:the|a|an|its|their|our|my|your|his|her|any)\s", re.I)


def _two_rules(statement: Statement) -> list[Statement]:
    """A rule that gives two instructions joined by "and", as two rules, each with the condition said for both
    ("When you write bash, start with `set -euo pipefail` and quote every variable": "When you write bash, quote every
    variable.")."""
    text = statement.text.rstrip(".")
    joint = _AND_DO_RE.search(text) or next((found for found in _listed(text) if not _LAST_ITEM_RE.match(
        text[found.end():]) or _HAS_VERB_RE.search(text[found.end():])), None)
    if joint is None:
        return [statement]
    first = text[:joint.start()]
    condition = _rule_condition(first)
    if condition is None:
        return [statement]
    second = text[joint.end():]
    second = condition + (second if condition else second[:1].upper() + second[1:])
    return [replace(statement, text=finish(first), keyword=keyword(first, last=True)),
            replace(statement, text=finish(second), keyword=keyword(second, last=True))]


# where one statement joins two: "Our CRM is HubSpot and the support desk is Zendesk" (each half with a subject and a
# verb of its own)
_TWO_CLAUSES_RE = re.compile(r"\s*;\s*|,\s+(?:and|but|while|whereas)\s+|\s+(?:but|while|whereas)\s+|,\s+|\s+and\s+|\s+[—–]\s+")
_CLAUSE_START_RE = re.compile(
    rf"^(?!(?:it|they|he|she|if|when|even|after|there|not|{_FACT_VERBS}|{lx.PERSON_VERBS})\b)(?:(?:the|our|my|their|all|every|each|most|a|an|its|some|any|only)\s+)?"
    rf"(?:[\w./@`'’+#-]+\s+){{1,4}}?(?:\([^)]*\)\s+)?{_FACT_VERBS}\b", re.I)
_HAS_VERB_RE = re.compile(rf"\b{_FACT_VERBS}\b", re.I)
_IS_NAME_END_RE = re.compile(r"\bis\s+(?P<n>(?:(?:Mr|Ms|Mrs|Dr)\.?\s+)?(?-i:[A-Z])[\w'’-]+(?:\s+(?-i:[A-Z])[\w'’-]+)?)$")
_JOINED_KINDS = ("fact", "people", "schedule", "personal", "decision")
# ", and"/", but": where a list of statements of any kind but identity goes on ("Curly quotes, never straight ones,
# and em-dashes closed up"; "Our POS is Lightspeed, and the weekly sales come out as one xlsx"), unless what follows
# leans on what came before ("…, and it's refreshed nightly")
_AND_NEXT_RE = re.compile(r",\s+(?:and|but)\s+")
_LEANS_RE = re.compile(r"(?:it|it's|its|they|they're|them|this|that|these|those|which|so|then|yes|obviously|also|he|"
                       r"she|he's|she's|there)\b", re.I)
_LIKING_RE = re.compile(r"^The user(?:\s+\w+ly)?\s+(?:likes|loves|prefers|hates|enjoys|wants|would (?:like|rather)|"
                        r"can't stand)\s")


def _listed(text: str) -> Iterator[re.Match[str]]:
    """The joints of ``text`` where a list of statements goes on: ", and"/", but" outside brackets, with two words or
    more after it that do not lean on what came before."""
    for joint in _AND_NEXT_RE.finditer(text):
        right = text[joint.end():]
        if len(right.split()) >= 2 and not _LEANS_RE.match(right) and \
                text.count("(", 0, joint.start()) <= text.count(")", 0, joint.start()):
            yield joint


def _joined(statement: Statement, listed_only: bool = False) -> list[Statement]:
    """A statement that joins two, each a clause with a subject and a verb of its own, as two ("The `orders` table is
    partitioned by month and the partition key is created_at"); a part without its own subject ("…, and owns the
    outbound sequences"), or that leans on the first ("…, even though the frontend is camelCase"), stays joined. A
    list written out with ", and" is cut at each "and" (:func:`_listed`), whatever the parts' verbs; a liking said
    once is the liking of each part ("The user likes snake_case in python, but camelCase in JS")."""
    if statement.kind in ("identity", "rule"):  # (a rule's parts are _two_rules')
        return [statement]
    text = statement.text.rstrip(".")
    listed = {joint.start() for joint in _listed(text)}
    parts, start, said = [], 0, ""  # said: who a leading "he"/"she" of the part from start is
    for joint in _TWO_CLAUSES_RE.finditer(text):
        left, right = said + text[start:joint.start()], text[joint.end():]
        he = re.match(r"(?:he|she)(?:['’]s(?=\s)|(?=\s))", right, re.I) if statement.kind == "people" else None
        cut = len(he.group(0)) if he else 0
        name = ((found.group("n") if (found := _IS_NAME_END_RE.search(left)) else None) or statement.subject) if cut \
            else None  # "my team leader is Tomasz, he checks all my calculations": Tomasz does ("she's CEO": is)
        named = f"{name} is" if name and cut > 3 else name
        if named:
            right = named + right[cut:]
        if statement.kind in _JOINED_KINDS and not listed_only and len(left.split()) >= 3 and len(right.split()) >= 3 and \
                _HAS_VERB_RE.search(left) and (_CLAUSE_START_RE.match(right) or name and re.match(
                    rf"{re.escape(name)}\s+\w+s\b", right)) or joint.start() in listed and len(left.split()) >= 2:
            parts.append(left)
            liking = _LIKING_RE.match(text) if joint.start() in listed and statement.kind == "preference" and \
                not _HAS_VERB_RE.search(right.split(",")[0]) else None
            start, said = joint.end() + (cut if named else 0), named or (liking.group(0) if liking else "")
    if not parts:
        return [statement]
    parts.append(said + text[start:])
    return [_part_of(statement, part) for part in parts]


_SOME_TIME_RE = re.compile(rf"\b(?:{lx.DAYS}|{lx.MONTHS})s?\b", re.I)


def _says_when(text: str) -> bool:
    """Whether ``text`` names a day, a month or a time of day: a schedule's part that does is the schedule's."""
    return bool(_SOME_TIME_RE.search(text) or lx.CLOCK_RE.search(text))


def _part_of(statement: Statement, part: str) -> Statement:
    """One part of a statement cut in two (:func:`_joined`), of the whole's kind; but a part of a schedule that says
    no time is not one ("Giulia gives me her courgette glut every August, and her son Marco sorts out my laptop"):
    it is what the corpus-trained classifier reads it as alone, if anything."""
    cut = replace(statement, text=finish(part), keyword=keyword(part))
    if statement.kind != "schedule" or _says_when(part):
        return cut  # (a part with a word of recurrence, "every week", the rules read alone: _pieces cut it off already)
    kind = learned.likely_kind(part)
    return replace(cut, kind=kind) if kind else cut


# a named relative and the work they do: "The user's sister Aroha is a midwife", "… son Arjun works at Deloitte"
_KIN_AT_WORK_RE = re.compile(rf"^The user's (?:{lx.FAMILY}) (?P<n>(?-i:[A-Z][\w'’-]+)(?: (?-i:[A-Z][\w'’-]+))?) "
                             rf"(?:is an? |works\b|does\b|handles\b|runs\b|owns\b|manages\b)", re.I)


def _kin_at_work(statement: Statement) -> Statement:
    """A named relative's job or part of the work is what that person does (a people record), like a colleague's;
    that the person has a sister, a son, is a personal fact."""
    kin = _KIN_AT_WORK_RE.match(statement.text) if statement.kind == "personal" else None
    if kin:
        return replace(statement, kind="people", subject=statement.subject or kin.group("n"))
    return statement


def _of_the_user(statement: Statement) -> Statement:
    """``statement`` with no first person left ("Emeka reviews all my PRs" → "… all the user's PRs"); an
    instruction keeps its "me" ("Give me the diff")."""
    if statement.kind == "rule" or not _FIRST_PERSON_RE.search(statement.text):
        return statement
    return replace(statement, text=finish(about_user(statement.text.rstrip("."))))


_STACK_ITEM_RE = re.compile(r"^(?!(?:i|we|you|it|they|he|she|this|that|there|can|could|please|pls|bye|hello|hi|"
                            r"goodbye|farewell|welcome|no|yes|ok|okay|so|but|then|now)\b)[\w`@./+#-]+"
                            r"(?:\s+[\w`@./+#()-]+){0,7}$", re.I)
_PARTICIPLE_RE = re.compile(r"^(?:deployed|hosted|built|written|run|running|served|packaged|managed|pinned|tested)\b",
                            re.I)


def _stack(body: str, named: bool = False) -> list[Statement]:
    """A list of the parts of a system under a context label ("context: rails 7.1 monolith, sidekiq for jobs,
    postgres 15 on RDS"): one fact a part. Empty unless every part is a short phrase naming something concrete
    (a version, a name, a path) without a verb of its own."""
    body = re.sub(r"^(?:(?:this|it)(?:'s|’s| is) (?:an? )?|we(?:'re|’re| are) on |we use )", "", body, flags=re.I)
    items: list[str] = []
    nots: dict[int, str] = {}  # "GitLab self-hosted, not GitHub": what a part is not is said with it
    for item in (i.strip(" .") for i in re.split(r"\s*,\s*(?:and\s+)?|\s*;\s*", body)):
        if items and re.match(r"not\s", item, re.I):
            nots[len(items) - 1] = f", {item}"
        elif item:
            items.append(item)
    if len(items) < 2 or not all(_STACK_ITEM_RE.match(i) and not re.search(rf"\s{_FACT_VERBS}\s", f" {i} ")
                                 and (re.search(r"\d|[A-Z]|`|/", i) or len(i.split()) >= 2 and not named)
                                 and not (named and _TASK_RE.match(i)) for i in items):
        # (``named``: no label said it is a stack, so each part names something and none is a task)
        return []
    return [Statement(finish(f"The project is {i}{nots.get(n, '')}" if _PARTICIPLE_RE.match(i) else
                             f"The project uses {i}{nots.get(n, '')}"), "fact", keyword(i))
            for n, i in enumerate(items)]  # (no subject: the parts of one system stay together)


# a line of a team list ("Aaliyah: SRE, runs the pager rotation"), and what a person does said without them
_PERSON_LABEL_RE = re.compile(r"^(?P<n>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)\s*:\s+(?P<d>.+)$")
_PERSON_VERB_LEAD_RE = re.compile(rf"^(?:{lx.PERSON_VERBS})\b", re.I)


# one clause that ends on what it is about, said before it ("the hosting provider only supports that", "Dmitri is
# leading that"; not a time: "… 48 hours before that", nor what follows a statement: "Exports start with 3 lines of
# junk before the header, so skip those"); kept when the message said before what it is ("an active account = … .
# the MAU number uses that")
_ENDS_ON_SAID_RE = re.compile(r"^[^,;]*(?<!\bbefore)(?<!\bafter)(?<!\buntil)(?<!\btill)(?<!\bsince)(?<!\bthan)"
                              r"\s+(?:that|this|these|those)\W*$", re.I)
# a lapse the person owns up to ("I tend to forget semicolons"): the rules' "I tend to …" leaves it out on purpose
_LAPSE_RE = re.compile(rf"{_I}{_ADV}\s+tend\s+to\s+forget\b", re.I)
# a thing needed now ("We need a web framework for the new billing service", "I need a query for 5xx rate"), not a
# standing need ("I need the slide recap the day before, every time")
_NEED_NOW_RE = re.compile(rf"^(?:{_I}|we){_ADV}\s+need\s+(?:a|an|some|new|more)\s(?!.*\b(?:every|each|always)\b)", re.I)


# what held until now, said beside what holds ("I'm not in the Loans team now, I moved to Cards")
_ENDED_RE = re.compile(r"\bnot\b.*\bnow$", re.I)


# "it"/"them"/"that format" past a clause's first word: what it points to was said in the clause before
_IT_LATER_RE = re.compile(r"(?<!^)\b(?:it|them|that\s+format)\b", re.I)


def _alone(clause: str) -> bool:
    """Whether a clause the rules read nothing in, beside one they read something in, is read by the classifier
    (:func:`_learned`): where it is all but certain of a kind (:data:`~.learned.ALONE`; "I'm gluten-free and I've
    done intermittent fasting for years"), unless the clause says what held until now ("I'm not in the Loans team
    now, I moved to Cards"), names a time zone (read with the place said before it: "I'm in Kigali, so I'm on
    CAT") or points back with "it" ("… runs in Frankfurt and we load 40 GB a day into it": no record on its own)."""
    return not (_ENDED_RE.search(clause.rstrip(" .!")) or _ZONE_RE.search(clause) or _IT_LATER_RE.search(clause)) \
        and learned.certain_kind(clause) is not None


_LEAVING_RE = re.compile(r"^(?:we|i)(?:'re|'m| are| am)\s+going\s+home\b", re.I)


def _learned(sentence: str, person: str | None, thing: str | None, told: bool = False,
             earlier: str | None = None) -> list[Statement]:
    """What the corpus-trained classifier (:mod:`.learned`) reads in a sentence the rules read nothing in, said so
    that it stands alone: a leading "he/she" is the person and "it/they" the thing the message is about; without
    one to name, the sentence is not kept (nor a fact about "that" when the message ``told`` nothing before it). An
    object "him"/"her" is the person named ``earlier`` (before the sentence), never the sentence's own subject:
    "Joanna deals with him on anything money related" after "Mehdi is the client's PM" is about Mehdi."""
    named = _PRONOUN_RE.match(strip_lead(sentence)[0]) if person else None
    kind = learned.likely_kind(_named_subject(person, named, strip_lead(sentence)[0]) if named and person else sentence)
    if kind == "fact" and named:
        kind = "people"  # ("He's strict about a 24-hour turnaround", after the person was named: what they are like)
    if kind is None:
        return []
    body = _TRAILER_RE.sub("", strip_lead(sentence)[0].rstrip(" .!…"))
    head = re.match(r"^(?:the|this|that|my|our)\s+([\w-]+)", body, re.I)
    preferred = re.split(r"\b(?:prefer|rather)\b", body, maxsplit=1)
    if len(body.split()) < 3 or sentence.rstrip().endswith("?") or _REASONING_RE.search(body) or kind in (
            "fact", "people") and not told and _ENDS_ON_SAID_RE.match(body) or _LAPSE_RE.match(body) or _NEED_NOW_RE.match(body) or _MIND_ONLY_RE.match(
            body) or kind == "preference" and re.search(r"\b(?:this|that|the\s+old)\s+(?:approach)\b|"
                                                        r"\bfor this\W*$", body, re.I) or kind == "fact" and (
            _PASSING_STATE_RE.search(body) or head and head.group(1).casefold() in _WORK_AT_HAND) or (
            kind == "people" and _PERSON_VERB_LEAD_RE.match(body) or  # ("leads the migration": who does, unsaid)
            kind == "identity" and re.match(rf"{_IM}\s+(?:(?:now|still)\s+)?(?:at|with)\s+{_SOMEWHERE}", body) or
            kind == "identity" and re.search(r"\b(?:next\s+(?:week|month)|tomorrow|tonight)\b", body,
                                             re.I) or  # ("I'm in Lisbon next week": a trip)
            kind == "identity" and _CALL_ME_RE.match(body) or  # (a name is the rules' to read: "people call me sam"
            # after "I'm Sam" says nothing new)
            kind == "people" and _A_WORD_ON_RE.match(body) or
            kind == "decision" and (_DECIDED_WHAT_BEFORE_RE.search(body) or _DECIDED_TO_WAIT_RE.search(body)) or  # ("we
            # decided that last week", "we agreed to wait for the patch")
            _LEAVING_RE.match(body) or  # ("we're going home early": where the person goes now, no choice of anything)
            re.search(r"\bnothing big\b", body, re.I) or  # (the size of the job at hand)
            kind == "schedule" and (_one_plan(body) or _MOVE_ME_RE.match(body)) or kind == "preference" and (len(preferred) == 2 and _step_at_hand(preferred[1]) or _of_something_said(body))):
        return []  # what the rules know is not durable stays so: a word or two, a question, a reason or a complaint,
        # a passing state, the work at hand
    body = re.sub(r"^(?:please|pls|plz)\s+", "", body, flags=re.I)
    if kind == "rule":  # "Explain in simple English, my English is not so good": the instruction, not its reason
        body = re.sub(r",\s+my\s.*$", "", body)
    it = _THING_PRONOUN_RE.match(body)
    if it:
        if not thing:
            return []
        body = f"the {thing}{_PRONOUN_VERB.get(it.group('v') or '', '')}{body[it.end():]}"
    pronoun = _PRONOUN_RE.match(body)
    if pronoun:
        if not person:
            return []
        body = _named_subject(person, pronoun, body)
    body = _named_in_clause(body, earlier)
    text = finish(body if kind == "rule" else about_user(body))
    whole = Statement(text, kind, keyword(body), slot_of(text) if kind in ("identity", "personal") else None)
    parts = _joined(whole)
    kept = [part for part in parts if learned.likely_kind(part.text) == kind and not re.match(r"(?:so|which|as|think|that|this|then)\b", part.text, re.I)]
    if len(parts) > 1 and len(kept) == len(parts):
        return kept
    return _two_rules(whole) if kind == "rule" else _joined(whole, listed_only=True)  # (a list written out is cut
    # whatever the classifier reads in each part)


def _person_label(clause: str) -> str:
    """A list item of a team said as a sentence: "Aaliyah: SRE, runs the pager rotation" → "Aaliyah is SRE, runs the
    pager rotation", "Yuki: owns the auth service" → "Yuki owns the auth service" (else the name, read as a label,
    was left out and the record named no one)."""
    found = _PERSON_LABEL_RE.match(clause)
    if found is None or leading_name(found.group("n")) != found.group("n") or label_hint(found.group("n")) or \
            lx.ROLE_RE.search(found.group("n")):  # ("Owner: SRE on-call": a field of a form)
        return clause
    name, said = found.group("n"), found.group("d")
    if _PERSON_VERB_LEAD_RE.match(said):
        return f"{name} {said}"
    return f"{name} is {said}" if lx.ROLE_RE.search(said.split(",")[0]) else clause


# a name of two or three words, said on its own right after the person gave theirs
_FULLER_NAME_RE = re.compile(r"(?:[A-Z][\w'’-]+\s+){1,2}[A-Z][\w'’-]+")


def extract_by_sentence(text: str) -> list[tuple[str, list[Statement]]]:
    """``(sentence, the statements read in it)`` for each sentence of the message's prose, in order: what the rules
    read, or, in a sentence they read nothing in, what the corpus-trained classifier does (:func:`_learned`). A code
    comment quoted inline is no one's statement here, only words of the sentence that quotes it: an instruction or a
    liking may name one ("stop adding `// TODO: tidy this later` comments"), and what else says one is what the code
    says ("the worker has `/* we decided to never retry */`")."""
    hidden, comments = hide_quoted_comments(text)
    if not comments:
        return _with_pronouns(_unquoted(text, _by_sentence(text)))
    return _with_pronouns(_unquoted(text, [(show_quoted_comments(sentence, comments),
                             [replace(st, text=shown) for st in found
                              if (shown := show_quoted_comments(st.text, comments)) == st.text or st.kind in (
                                  "rule", "preference")])
                            for sentence, found in _by_sentence(hidden)]))


def _with_pronouns(groups: list[tuple[str, list[Statement]]]) -> list[tuple[str, list[Statement]]]:
    """``groups`` with the person's pronouns where a sentence says them beside something else the rules read first
    ("Sam here (they/them), SRE", "Name's Ana, she/her", "I'm Ana (she/her)"): the set goes after the name, or last.
    Not where a statement already holds the set ("btw Dara (they/them) owns billing")."""
    out = []
    for sentence, found in groups:
        said = _PRONOUNS_ANYWHERE_RE.search(re.sub(r"`[^`]*`", " ", sentence))
        if said and not any(said.group(0).casefold() in st.text.casefold() for st in found) and not sentence.rstrip().endswith("?") \
                and _OWN_PRONOUNS_RE.search(sentence):
            pronouns = Statement(finish(f"The user's pronouns are {said.group(0).lower()}"), "identity",
                                 said.group(0).lower(), "pronouns")
            at = next((i + 1 for i, st in enumerate(found) if st.slot == "name"), len(found))
            found = [*found[:at], pronouns, *found[at:]]
        out.append((sentence, found))
    return out


# words in quotes: what someone wrote or said, given to translate, rewrite or check ("reviewer left
# this on my PR: 'we decided in the RFC to never use inline styles'"), not the person's own statement
_QUOTED_WORDS_RE = re.compile(r"(?:^|(?<=[\s:(]))['‘\"“](?P<q>(?:[^'‘’\"“”\n]|(?<=\w)['’](?=\w)){12,}?)['’\"”]"
                              r"(?=[\s.,;:!?)—-]|$)")  # (an apostrophe inside a word is no closing mark: "I'm")
_CONTENT_WORD_RE = re.compile(r"[^\W\d_]{4,}")
QUOTED_SHARE = 0.8  # this share of a statement's words inside one quote: the quote is what it says


def _content_words(text: str) -> set[str]:
    return {word.casefold() for word in _CONTENT_WORD_RE.findall(text)} - {"user"}


def _own_quote(text: str, quote: re.Match[str]) -> bool:
    """Whether the person gives ``quote`` as their own words: alone on its line, or after a lead-in of theirs
    ("one more rule: 'always run the linter first'")."""
    before = text[text.rfind("\n", 0, quote.start()) + 1:quote.start()].strip()
    if before:
        rest, hint = strip_lead(f"{before} said")
        return rest == "said" and hint is not None
    after = text[quote.end():].split("\n", 1)[0]
    return not re.search(r"\w", after)


def _unquoted(text: str, groups: list[tuple[str, list[Statement]]]) -> list[tuple[str, list[Statement]]]:
    """``groups`` without the statements that only say what a quote in the message says: someone else's words
    (a statement that keeps the quote marks quotes the words to use: "say 'confirm with the partner'")."""
    quotes = [_content_words(found.group("q")) for found in _QUOTED_WORDS_RE.finditer(text)
              if not _own_quote(text, found)]
    if not quotes:
        return groups

    def quoted(statement: Statement) -> bool:
        said = _content_words(statement.text)
        return bool(said) and not re.search(r"(?:^|(?<=[\s:(]))['‘\"“]\S", statement.text) and any(
            len(said & quote) >= QUOTED_SHARE * len(said) for quote in quotes)
    return [(sentence, [st for st in found if not quoted(st)]) for sentence, found in groups]


# the word a reason starts with: what follows it is why, not a second decision ("we're moving to Google Drive,
# because Yuki and Mehdi both use Gmail")
_REASON_BEFORE_RE = re.compile(r"\b(?:because|since)\W*$", re.I)  # (where a sentence's clauses are cut)


# an instruction for the piece of work at hand: "in this figure", "on this invoice", "…, just fix the typo" (not "in this
# repo", "in this company": where it holds for good)
_AT_HAND_RE = re.compile(r"\b(?:in|on)\s+this\s+(?!(?:repo|project|team|company|codebase|house|workspace|org)\b)"
                         r"[\w-]+\b|,\s+just\s+(?:fix|give)\s+(?!(?:it|things)\b)|\bfor\s+the\s+(?:next|rest\s+of\s+the)\s+(?:\w+\s+)?"
                         r"(?:hours?|minutes?|mins?|days?|afternoon|morning|evening|night|week)\b", re.I)  # ("… for the next hour": till then)


def _at_hand(rule: str) -> bool:
    """Whether ``rule`` is for the piece of work at hand, not from now on."""
    return bool(_AT_HAND_RE.search(rule)) and not _FOR_GOOD_RE.search(rule)


def _by_sentence(text: str) -> list[tuple[str, list[Statement]]]:
    if agent_generated(text):
        return []
    groups: list[tuple[str, list[Statement]]] = []
    out: list[Statement] = []
    seen: set[str] = set()
    person: str | None = None
    thing: str | None = None  # the subject of the last fact: what a following "it" is
    listed: str | None = None  # the kind a "My preferences:" line gives the list items under it
    opening, greeted = True, False  # no sentence but a bare greeting yet: a self-introduction may come
    last_named = False  # the sentence before gave the person's name and ended there
    kin_of: dict[str, str] = {}  # family named in a personal record: "Tom" → "husband"
    retracted: re.Match[str] | None = None  # the sentence before took back what was said about something, and ended
    introduced: set[int] = set()  # the groups of a self-introduction: the person's own, whatever the classifier reads

    def keep(statement: Statement) -> None:  # each statement once, in order, said of "the user"
        statement = _kin_at_work(_of_the_user(_without_mind_tail(statement)))
        if statement.kind == "rule":
            *before, statement = _two_rules(statement)
            for one in before:
                keep(one)
        if statement.kind == "rule" and _DANGLING_RULE_RE.search(statement.text) or _KEEP_IN_MIND_RE.search(
                statement.text) or statement.kind != "rule" and (re.match(r"in case you\b", statement.text, re.I) or
                                                                  _ANY_OF_IT_RE.search(statement.text)):
            return  # "don't merge migrations without his 👍", "keep that in mind when you schedule": about what?
        if statement.kind == "rule" and _at_hand(statement.text):
            return  # "always use the same colour for the control group in this figure": this figure's
        if _COURTESY_RE.search(statement.text):
            return  # "I prefer not to say", "Always happy to help test": a courtesy, not a preference or a rule
        if statement.kind == "preference" and re.search(r"\blikes?\s+\d", statement.text):
            return  # "i got 38 kids and like 20 flags": about 20, no liking
        if _AWAY_RE.search(statement.text):
            return  # "she's out till monday": a passing absence (who is on leave until March is kept)
        if statement.kind == "rule" and _REPORT_BACK_RE.search(statement.text) and not _OUTLIVES_RE.search(
                statement.text):
            return  # "run the migrations on local and tell me if anything breaks": a job to do now, and report
        if statement.kind == "rule" and re.match(r"only\b.*\bcalls?\s+me\b", statement.text, re.I):
            statement = Statement(finish(about_user(statement.text)), "identity", statement.keyword)  # ("Only my mum
            # calls me Samantha": who uses which name, no standing order)
        if statement.kind == "rule" and (say := _SAY_OF_RE.search(statement.text)):
            statement = replace(statement, kind="people", subject=say.group("n"))  # whose say it is: a person's role
        if statement.kind == "rule" and (_ANAPHOR_RULE_RE.match(statement.text) and not (
                len(groups) > 1 and groups[-2][1] and _FOR_GOOD_RE.search(statement.text)) or re.match(
                r"^\w+\s+them\b", statement.text, re.I) and not any(said for _, said in groups)):
            return  # "No, keep it as a list": what "it" is, nothing the message said before tells (but "we picked
            # Biome. use it for every new package from now on": the sentence before named it, and it is for good)
        parts = _joined(statement)
        if len(parts) > 1:  # (each part is kept as it would be alone, once the whole was)
            for part in parts:
                keep(part)
        elif statement.text.casefold() not in seen:
            seen.add(statement.text.casefold())
            out.append(statement)

    for sentence, item in marked_sentences(text):
        out = []
        said_before = any(found for _, found in groups)  # (the message said something before this sentence)
        groups.append((sentence, out))
        if _in_another_language(sentence.rpartition(": ")[2]):
            continue  # "translate this: kami mohon maaf …": text to work on, not the person's English
        if opening and _BARE_GREETING_RE.match(sentence):  # "Hiya — Ana, …": the dash split the greeting off
            greeted = True
            continue
        intro = _introduction(sentence, greeted) if opening else None
        opening = False
        named, last_named = last_named, False
        full = sentence.strip(" .,")  # "I'm Mrs. Okonkwo — Adaeze Okonkwo — and I teach …": the full name
        if named and _FULLER_NAME_RE.fullmatch(full) and groups[-2][1][-1].keyword.split()[-1].casefold() == \
                full.split()[-1].casefold():
            groups[-2][1][-1] = Statement(finish(f"The user's name is {full}"), "identity", full, "name")
            continue
        if named:  # "hey it's Tariq — senior PM at Qubit Logistics, …": the dash split the role off the name
            head, comma, tail = sentence.partition(",")
            intro = _appositive(head) if not re.match(rf"(?:{_IM}|{_I}|we|you|it|this|that)\b", head, re.I) and not \
                re.search(r"\s(?:is|are|was|were)\s", head) else []  # (a clause of its own: "— Bruno is my manager")
            if intro and comma and tail.strip():
                for statement in intro:
                    keep(statement)
                intro, sentence = None, tail.strip()
        if intro:
            for statement in intro:
                keep(statement)
            introduced.add(len(groups) - 1)
            last_named = bool(out) and out[-1].slot == "name"  # ("Tomás here — data engineer at Klarna, …")
            continue
        head, children = _children(sentence, groups[:-1])
        for child in children:
            keep(child)
        if children:
            if not head:
                continue
            sentence = head
        if not item:
            listed = None
        if sentence.endswith(":") and not item:
            listed = label_hint(sentence[:-1]) if len(sentence.split()) <= 6 else None
            continue
        retract = _RETRACT_RE.match(sentence)
        if retract:  # "scratch that about Dramatiq, we're staying on Celery": what follows replaces it
            sentence = sentence[retract.end():]
            if not sentence.strip():  # "forget what I said about Dramatiq — we're …": the next sentence says what
                retracted = retract
                continue
        retract, retracted = retract or retracted, None
        body, hint = strip_lead(_person_label(_field(sentence)) if item else _field(sentence))
        hint = hint or listed or ("decision" if retract else None)
        lead = sentence[:max(sentence.find(body), 0)]  # the lead-in strip_lead took off ("for this session only:")
        label, colon, rest = body.rpartition(": ")
        label = label if colon else lead
        if (colon and _TASK_RE.match(label) and not re.search(r"\b(?:remember|note|keep in mind)\b", label, re.I)
                or _FOR_NOW_RE.search(label) and not _OUTLIVES_RE.search(re.sub(r"\bonly\b", "", label))
                and not re.search(r"\b(?:context|background)\b", label, re.I)
                or _FOR_NOW_FIRST_RE.match(body) and not _OUTLIVES_RE.search(body)):
            continue  # "can you turn … into a table: name, date", "for this session only: …": the task's, the moment's
            # (but "background for this session: …" tells what holds, for this session and after it)
        about = re.search(r"\b(?:on|about|for)\s+(?:my|our|the)\s+(?P<t>[\w-]+(?:\s+[\w-]+)?)\W*$", label)
        if about:  # "some context on the app: it's a Flutter app …": what "it" is
            thing = about.group("t")
        if colon and len(label.split()) <= 14 and len(rest.split()) >= 2:  # "some background …: I'm Chiara"
            hint = hint or strip_lead(label + ":  x")[1]
            body = rest
        body = _EVER_RE.sub(r"never \g<what>", body)  # "don't touch vendor/, ever": a standing "never"
        body = _HERE_ON_RE.sub(r"\1rom now on", body)  # "from here on (out)": from now on
        if re.fullmatch(rf"\W*(?:{_PRONOUNS_ANYWHERE_RE.pattern})(?:\s+(?:btw|fyi|pls|please))?\W*", sentence, re.I) and \
                not re.search(r"(?<=[a-z,]\s)(?-i:[A-Z][a-z]+)", " ".join(
                    said for said, found in groups[:-1] if not any(st.slot == "name" for st in found))):
            body = f"my pronouns are {body}"  # "she/her btw": pronouns alone are the person's own (not after "I hired
            # Dana Okoye.", not "Dana: she/her")
        after_fact = len(groups) > 1 and any(st.kind == "fact" for st in groups[-2][1]) and re.search(
            r"[—–-]\s*" + re.escape(sentence[:24]), text)  # "We're on GCP — BigQuery for the warehouse, …"
        stack = _stack(body) if hint == "fact" else _stack(body, named=True) if after_fact else []
        for statement in stack:
            keep(statement)
        liking = _WHICH_I_RE.search(body)  # "redirects live in a _redirects file, which I hate but whatever"
        body = body[:liking.start()] if liking else body
        parts = [] if stack else _so_then(body)
        cut = [(c, then) for part, then in parts for c in clauses(part)]
        before_sentence = person  # (who "him"/"her" in it can be: not its own subject)
        for clause, then in cut:
            reason = _REASON_BEFORE_RE.search(body[:max(body.find(clause), 0)])  # (what follows "because")
            if then and not out and is_negative(parts[0][0]):
                continue  # "I'm on the bus, so keep replies short": because of the moment, for the moment
            if then and not _OUTLIVES_RE.search(clause) and not (
                    (any(st.kind in ("personal", "identity") for st in out) or subject_person(parts[0][0]))
                    and not _POINTS_HERE_RE.search(clause)):  # ("Rahul finds the edge cases, so cc him on …")
                then = None  # "…, so flag those in the PR": read as it stands, no rule for its reason alone (but
                # what the person is makes it theirs: "I'm colour blind so avoid red/green badges")
            clause, inner = strip_lead(clause)
            inner = inner or then
            clause = _TRAILER_RE.sub("", clause.rstrip(" .!…"))
            when = re.match(rf"(?:{_IM}|{_I}'ll be|{_I} will be)\s", clause) and _THEN_RE.search(clause) and \
                _WHEN_RE.search(body[:max(body.find(clause), 0)])
            if when:  # "swim lessons on tuesdays at 5, so I'm offline 16:30-18:00 then": then is on tuesdays
                clause = f"{_THEN_RE.sub('', clause)} {when.group(0)}"
            if _SUBJECTLESS_RE.match(clause):  # "Speak Portuguese", "not a fan of ORMs", "mostly python"
                verb = clause.split()[0].casefold()
                if verb in ("mostly", "usually", "mainly", "primarily"):
                    out.extend(_mostly(clause))
                    continue
                lead = "I'm a " if verb == "big" else "I'm " if verb in ("based", "originally", "not", "working") else \
                    "I've " if verb == "been" else "I "
                clause = lead + clause[:1].lower() + clause[1:]
            named_kin = re.match(r"(?P<n>[A-Z][\w'’-]+)\s+(?=is|has|can't|cannot|doesn't|won't|hates|loves|needs)\b", clause)
            if named_kin and named_kin.group("n") in kin_of:  # "Tom is allergic to shellfish": the husband named before
                clause = f"my {kin_of[named_kin.group('n')]} {clause}"
            it = _THING_PRONOUN_RE.match(clause)
            if it and thing:  # "The search cluster is Elasticsearch … it's managed by the infra team"
                clause = f"the {thing}{_PRONOUN_VERB.get(it.group('v') or '', '')}{clause[it.end():]}"
            pronoun = _PRONOUN_RE.match(clause)
            if pronoun and person:
                clause = _named_subject(person, pronoun, clause)
            condition = _CONDITION_RE.match(clause)
            pronoun = _PRONOUN_RE.match(clause[condition.end():]) if condition else None
            if condition and pronoun and person:  # "If a dashboard breaks, he's the one to ping": named before
                cond = clause[:condition.end()].rstrip(", ")
                head, sep, tail = _named_subject(person, pronoun, clause[condition.end():]).partition(", ")
                clause = f"{head} {cond[:1].lower()}{cond[1:]}{sep}{tail}"  # (said of them, it files under them)
            clause = _named_in_clause(clause, person)
            since = _WHEN_IN_RE.sub("", _WHEN_END_RE.sub("", _SINCE_RE.sub("", re.sub(r"\s+at the moment\b", "", clause))))
            if since != clause and any(s.slot in _JOB | {"team"} for s in _identity(since)):
                clause = since  # "as of this week I'm the ops manager", "I start at X next week": the job from then on
            start = _STARTS_RE.match(clause)
            if start:  # "starting at Halden Health next week as an HR partner", "I start Monday as ops director at …"
                rest = _WHEN_IN_RE.sub("", start.group("rest"))
                job = f"I'm now {rest[3:]}" if rest[:2].casefold() == "as" else f"I work {rest}"
                if any(s.slot in _JOB for s in _identity(job)):
                    clause = job
            kin_of.update((kin.group("n"), kin.group("k")) for kin in _KIN_NAME_RE.finditer(clause))
            pieces = _pieces(clause, inner or (None if hint == "rule" and out or hint == "decision" and reason else hint))
            named_before = person
            for piece, statements in pieces:
                if not statements and len(pieces) == 1 and len(cut) > 1 and any(st.slot == "name" for st in out):
                    statements = _work_said(piece)  # "I'm Hana, I do partner marketing": what the person named does
                if not statements and len(pieces) > 1 and _OWN_CLAUSE_RE.match(piece):  # a clause of its own the rules
                # read nothing in (_pieces), not what is left of one ("…, ask the designer for the password")
                    statements = _learned(piece, person, thing, said_before, named_before)
                if not statements and len(pieces) == 1 and len(cut) > 1 and _alone(piece):
                    statements = _learned(piece, person, thing, said_before, named_before)
                for statement in statements:
                    if statement.kind == "people" and (who := _who(statement)):
                        person = who
                    elif statement.kind == "personal" and (kin := _KIN_NAME_RE.search(statement.text)):
                        person = kin.group("n")  # "my wife Giulia is a nurse … Her rota …": Giulia's
                        kin_of[person] = kin.group("k")
                    if statement.kind == "fact":
                        thing = _thing_phrase(statement.text) or thing
                    pronoun = _PRONOUN_RE.match(statement.text)
                    if pronoun and person:  # "My supervisor is Dr. Weber, she wants
                        # weekly reports": the person the clause before named
                        statement = replace(statement, text=finish(_named_subject(person, pronoun, statement.text)))
                    if statement.kind in ("fact", "people") and person and statement.text.startswith(f"{person} "):
                        # "Lukas runs the wet lab, he's in Munich": more about the person named before (or family)
                        statement = replace(statement, kind="personal" if person in kin_of else "people", subject=person)
                    before = out or next((said for _, said in reversed(groups) if said), [])
                    things = _PLURAL_END_RE.search(before[-1].text) if before and statement.kind == "rule" else None
                    if things and re.search(r"\bthem\b", statement.text):  # "strict about migrations, always run them
                        # by him first": the migrations
                        statement = replace(statement, text=re.sub(r"\bthem\b", things.group("p"), statement.text, 1))
                    keep(statement)
            name = subject_person(clause)
            if name and re.match(r"^[A-Z]", clause) and len(name.split()) <= 3 and clause[len(name):].startswith(" "):
                person = person if person and name.startswith(person) else name
            told = _TOLD_RE.findall(clause)  # "talk to Siobhán — she's the core facility tech": Siobhán (unless the
            # clause went on to name another: "I report to Wanjiru, and Dmitri owns the dbt project — he's …")
            if told and _is_name_word(told[-1].split()[0]) and person == named_before:
                person = told[-1]
        if any(st.slot == "location" for st in out) and not any(st.slot == "timezone" for st in out):
            zone = _SO_ZONE_RE.search(sentence)  # "I'm in Nairobi, so I'm on EAT, …": the place's time zone
            if zone:
                keep(Statement(finish(f"The user's timezone is {zone.group('z')}"), "personal", zone.group("z"),
                               "timezone"))
        last_named = bool(out) and out[-1].slot == "name"
        if not out:
            out.extend(st for st in _learned(_WHICH_I_RE.sub("", sentence), person, thing, said_before, before_sentence)
                       if not _COURTESY_RE.search(st.text)
                       and not _AWAY_RE.search(st.text) and not (
                st.kind == "rule" and (_DANGLING_RULE_RE.search(st.text) or _at_hand(st.text))))
            # ("… without my 👍": whose what? "… on this invoice": this invoice's)
            for st in out:  # "my project manager is Chiara Bellini — she assigns the jobs": who "she" is next
                if st.kind == "people" and (who := _who(st)):
                    person = who
        if liking and out and out[-1].kind == "fact":  # the person's liking of the fact said before it
            fact = out[-1].text.rstrip(".")
            keep(Statement(finish(f"The user {conjugate(liking.group('v'))} that {fact[:1].lower()}{fact[1:]}"),
                           "preference", out[-1].keyword))
        first = next((i for i, st in enumerate(out) if st.kind in ("decision", "fact")), None) if retract else None
        if retract and first is not None:  # (the first thing said after it is what replaces it)
            out[first] = replace(out[first], old=out[first].old or retract.group("old"))
    return [(sentence, found if i in introduced else _weighed(sentence, found))
            for i, (sentence, found) in enumerate(_task_constraints(groups))]


ENGLISH = 0.25  # a sentence fewer of whose words than this are English words may be in another language …
_ENGLISH_GLUE = frozenset(  # … and is, when it has five words or more and not one of these
    "the a an is are was were be been and or but to of in on at for with by from as this that it i you we they he she "
    "my our your their his her me us them not no do does did have has had will would can could should please if so "
    "all any every each what when where which who how there here after before about up out over into than then "
    "just only also very more most some new".split())


def _in_another_language(sentence: str) -> bool:
    """Whether ``sentence`` is text in another language, which the rules, written for English, would misread
    ("wir bitten um Entschuldigung …" is no rule): five words or more, not one English word of the kind every
    English sentence has, and few words of English's vocabulary at all (:data:`ENGLISH`; a stack of product names,
    "django 4.2, postgres 15, redis for caching", has its "for")."""
    said = [word for word in wordvectors.words(sentence) if word.isalpha()]
    if len(said) < 5 or any(word in _ENGLISH_GLUE for word in said):
        return False
    share = wordvectors.known_share(sentence)
    return share is not None and share < ENGLISH


COVERS = 0.6  # a statement this long, in words, against its sentence is what the whole sentence says


def _weighed(sentence: str, found: list[Statement]) -> list[Statement]:
    """``found`` as the corpus-trained classifier (:mod:`.learned`) weighs ``sentence``: the one statement of a
    sentence it says, of the kind the classifier is sure of where it is as sure the rules' kind is wrong ("Kwame
    does sprint planning …" read as a schedule); and each statement for the core whose kind it finds unlikely there,
    where it reads a kind that is not for the core (a fact, a person, a schedule …), doubted."""
    whole = len(found) == 1 and len(found[0].text.split()) >= COVERS * len(sentence.split())
    if not whole and len(found) < 2 and not any(st.kind in CORE_CATEGORIES for st in found):
        return [_dated(st) for st in found]  # (nothing else to weigh: the classifier is asked of a fact that says when)
    probs = learned.probabilities(sentence)
    if whole and found[0].slot != "timezone":  # (a time zone the rules read is the person's, whatever the words
        # around it: "for context I'm in Europe/Lisbon time" is no place they live)
        kind = learned.sure_kind(probs, found[0].kind)  # (of part of the sentence, the other part may be what it read)
        if kind is not None and not (found[0].kind == "people" and kind in ("identity", "personal")):  # (what the
            # rules read as said of someone else is not the person's own: "Ayo joined last week as a junior dev")
            text = found[0].text
            found = [replace(found[0], kind=kind, slot=slot_of(text) if kind in ("identity", "personal") else None)]
    elif len(found) > 1:
        found = [_surely(st) for st in found]
    found = [_dated(st) for st in found]
    return [replace(st, doubted=True) if st.kind in CORE_CATEGORIES and learned.doubts(probs, st.kind, CORE_CATEGORIES)
            else st for st in found]


def _dated(statement: Statement) -> Statement:
    """A fact the rules read that says when (a day, a month, a time of day) is a schedule where the classifier finds
    it more like one than like a fact ("The board pack locks on the 10th of each month", "The food bank is open
    Wednesdays 10-1"; "The retest window is 30 days" stays a fact)."""
    if statement.kind != "fact" or not _says_when(statement.text):
        return statement
    probs = learned.probabilities(statement.text)
    return replace(statement, kind="schedule") if probs.get("schedule", 0.0) > probs.get("fact", 0.0) else statement


def _surely(statement: Statement) -> Statement:
    """One of several statements of a sentence, of the kind the classifier is sure its text states where it is as
    sure the rules' kind is wrong ("Giulia Rossi is the client's CISO" read as a fact, before "and she signs off
    on …"); a part for the core, of the person's own life, or of a schedule that says when keeps the kind the rules
    read."""
    if statement.kind in CORE_CATEGORIES or statement.kind == "personal" or statement.kind == "schedule" and _says_when(
            statement.text):
        return statement
    kind = learned.sure_kind(learned.probabilities(statement.text), statement.kind)
    if kind is None:
        return statement
    return replace(statement, kind=kind, slot=slot_of(statement.text) if kind in ("identity", "personal") else None)


# children named with their ages after the person says they have them ("two kids — Tolu's 9 and Kemi's 5")
_KIDS_RE = re.compile(r"\b(?:kids|children|boys|girls|(?:mum|mom|dad) of)\b", re.I)
_AGE_PAIR_RE = re.compile(r"(?P<n>(?-i:[A-Z])[\w-]+)(?:'s|’s|\s+is)?\s+(?P<a>\d{1,2})\b")
_AGES_RE = re.compile(rf"(?:{_AGE_PAIR_RE.pattern}(?:\s*,\s*(?:and\s+)?|\s+and\s+|$))+")
def _children(sentence: str, earlier: list[tuple[str, list[Statement]]]) -> tuple[str, list[Statement]]:
    """What is left of ``sentence`` and a record per child it names with an age, once the person has said they have
    children, in it ("two boys, Sam is 7 and Leo is 4") or in an ``earlier`` sentence ("two kids — Tolu's 9 and Kemi's
    5", "mum of three (Yusuf 12, Noor 8)": the brackets come after the line's sentences)."""
    said = sentence.rstrip(" .!")
    head, comma, ages = said.partition(", ")
    if not (comma and _KIDS_RE.search(head) and _AGES_RE.fullmatch(ages)):
        if not (_AGES_RE.fullmatch(said) and any(_KIDS_RE.search(before) for before, _ in earlier)):
            return sentence, []
        head, ages = "", said
    return head, [Statement(f"The user's child {child.group('n')} is {child.group('a')}.", "personal", child.group("n"))
                  for child in _AGE_PAIR_RE.finditer(ages)]


# a condition before the clause it holds for ("if a dashboard breaks, …", "whenever prod is down, …")
_CONDITION_RE = re.compile(r"^(?:if|when|whenever|once|before|after|for anything)\b[^,]{3,80},\s*", re.I)
# the plural thing a statement ends on ("… is strict about migrations."): what a "them" right after it means
_PLURAL_END_RE = re.compile(r"\b(?:about|on|with|for|of|in)\s+(?P<p>(?:(?:the|our|all|any)\s+)?(?:[\w-]+\s+)?[a-z][\w-]*[^s\W]s)\.?$")
# what points at something in this conversation ("ignore that slack paste", "give me times in that")
_POINTS_HERE_RE = re.compile(r"\b(?:in|with|of|from|about|to)\s+(?:that|this|it)\b|\b(?:that|this|those|these)\s+\w",
                             re.I)
# "then" at a clause's end, and the time it points back to ("on tuesdays", "every Friday", "on weekends")
_THEN_RE = re.compile(r"\s+then$", re.I)
_WHEN_RE = re.compile(rf"\b(?:on|every|each)\s+(?:{lx.DAYS})s?\b", re.I)
# taking back what was said about something ("scratch that about Dramatiq, …", "forget what I said about the VPN:")
_RETRACT_RE = re.compile(
    r"^(?:(?:actually|ok|okay|wait|hmm+|oh|so|and|sorry)[\s,.!—–-]+)*(?:scratch|forget|ignore|disregard|never\s?mind)\s+"
    r"(?:that|this|what i (?:said|wrote|told you)|my last message|the (?:bit|part))?\s*(?:about|on|re:?|regarding)\s+"
    r"(?:the\s+)?(?P<old>[^,;:—–]{2,40}?)\s*(?:[,;:—–.!]|\s-|$)\s*", re.I)
# a time zone said as the person's own after their place: "so I'm on EAT", "so it's UTC+3 for me", "so use EAT"
_SO_ZONE_RE = re.compile(rf"\bso\s+(?:I'm\s+on\s+|i am on\s+|im on\s+|it's\s+|use\s+|times\s+are\s+)?(?P<z>{_ZONE_RE.pattern})",
                         re.I)
# the person an instruction sends the agent to ("talk to Siobhán", "ask Kofi", "loop in Mei Ling")
_TOLD_RE = re.compile(r"\b(?:talk to|speak to|ask|ping|tag|loop in|contact|email|message|check with|go to|(?:send|sends|"
                      r"sent|forward|forwards|give|gives|hand|hands|report|reports)\b[^.,;]{0,40}?\bto)\s+"
                      r"((?-i:(?:(?:Mr|Ms|Mrs|Dr)\.?\s+)?[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?))", re.I)
# a named family member in a personal record ("The user's wife Giulia is a nurse")
_KIN_NAME_RE = re.compile(rf"\b(?:user's|my|our)\s+(?P<k>(?:(?:little|older|younger|big|baby)\s+)?(?:{lx.FAMILY})),?\s+"
                          r"(?:is\s+)?(?P<n>(?-i:[A-Z][\w'’-]+))\b", re.I)
# "…, so <an instruction>": what the person asks because of what they just said ("I'm colorblind, so please don't
# rely on red vs green", "I moved to Lisbon, so timestamps in WET please")
_SO_THEN_RE = re.compile(
    r",?\s+so\s+(?=(?:(?:in|on|for)\s+(?:the|my|our|any|all)\s+(?:[\w-]+\s+){1,2},?\s*)?(?:please\s+|pls\s+|kindly\s+)?(?:when(?:ever)? you|if you|don't|do not|dont|never|always|use|flag|"
    r"keep|write|give|quote|put|add|avoid|stick|default|skip|show|include|assume|answer|reply|explain|ignore|tag|"
    r"ping|ask|cc|loop|timestamps|times|dates|prices|all times|any times|no\s+(?!worries\b)\w+)\b)",
    re.I)


def _so_then(clause: str) -> list[tuple[str, str | None]]:
    """``clause`` cut before an instruction it gives as a consequence, which is read as a rule."""
    found = _SO_THEN_RE.search(clause)
    if not found or found.start() == 0:
        return [(clause, None)]
    return [(clause[:found.start()], None), (clause[found.end():], "rule")]


# -- one attribute, whatever the phrasing ---------------------------------------------------
_JOB = frozenset({"role", "employer"})


def slot_of(content: str) -> str | None:
    """The single-valued person attribute a record states ("employer", "location" …), read like a new statement."""
    said = first_person(content.strip().rstrip("."))
    for statement in _identity(said) + _personal(said):
        if statement.slot:
            return statement.slot
    return None


def _file_slots(summary: "FileSummary") -> list[str | None]:
    """:func:`slot_of` of each record of a parsed topic file, computed once per parse (kept on the summary)."""
    cached = summary.__dict__.get("_slots")
    if cached is None:
        cached = summary.__dict__["_slots"] = [slot_of(r.content) for r in summary.records]
    return cached


# (eager: computed when a file is parsed and kept with the parse in the tree cache, so a cold process does not read
# every record of the workspace again the first time a statement has a slot: a quarter of a second at 10k records)
register_index("slotted", lambda summary: ("slotted",) if any(_file_slots(summary)) else (), eager=True)


def slotted_records(tree: "TreeState") -> list["RecordInfo"]:
    """Records stating a single-valued person attribute (their slot), in tree order."""
    out: list["RecordInfo"] = []
    for path in tree.index("slotted").get("slotted", ()):
        summary = tree.files[path]
        out.extend(r for r, slot in zip(summary.records, _file_slots(summary)) if slot)
    return out


def _names_employer(text: str) -> bool:
    return bool(_EMPLOYER_IN_RE.search(text))


def same_attribute(statement: Statement, content: str) -> bool:
    """Whether ``statement`` gives a new value for the attribute the record ``content`` states.

    The writer keeps role and employer apart ("The user is a backend engineer." and "The user works at Acme."), so
    a new employer leaves the role alone. A record that names its employer inside the role ("backend engineer at
    Acme": written by hand, or by a writer before 2026-12-05) is the job as a whole: "now works at Globex" replaces
    it. A bare role ("I'm a staff engineer") replaces only a bare role.
    """
    old = slot_of(content)
    if statement.slot is None or old is None:
        return False
    if statement.slot == old and statement.slot not in _JOB:
        return True
    if not (statement.slot in _JOB and old in _JOB):
        return False
    new_employer = statement.slot == "employer" or _names_employer(statement.text)
    old_employer = old == "employer" or _names_employer(content)
    return new_employer == old_employer
