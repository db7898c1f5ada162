"""Durable statements in what the person said: the rules writer's extractor.

:func:`extract_statements` reads one user message and returns the
statements worth keeping, each lightly normalized:

- **identity** — "I'm Dana", "my name is …", "I work at/as …", "I live
  in …", "I run …", "I speak …";
- **preference** — "I prefer/like/love/enjoy/hate …", "I don't like …",
  "I'd rather …", "my favourite … is …";
- **rule** — standing instructions: "always …", "never …", "don't …",
  "from now on …", "please use/answer/reply/…", "you should/must …";
- **decision** — "we decided …", "let's go with …", "we switched (from X)
  to Y", "we'll use …", "we're going with …";
- **fact** — project facts: "the billing service runs on …", "Orbit uses
  …", "our deadline is …", "we use …".

Everything else is skipped: questions, greetings and thanks, status checks,
one-off procedure ("run the tests", "open the file"), fenced code, quoted
or indented text, logs and tool output, and anything tied to the moment
("for now", "today", "this file").

Phrasing (one rule, applied everywhere): the person's words are kept; a
first-person subject becomes "The user" with the verb agreed ("I prefer
metric units" → "The user prefers metric units."; "my name is Dana" /
"I'm Dana" → "The user's name is Dana."); later "my/me/I" become
"their/them/they"; instructions stay imperative without "please"
("Please use British spelling" → "Use British spelling."); "we/our" stay
as spoken ("We decided to use FastAPI for the billing service."); "let's
X" becomes "We decided to X.".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("identity", "people", "preference", "rule", "decision", "fact", "schedule", "personal")


@dataclass(frozen=True)
class Statement:
    """One durable statement: normalized ``text``, its ``kind``, a ``keyword`` label.

    ``slot`` names a single-valued fact ("name", "location", "employer",
    "role", …) so a new value updates the old record in place; ``old`` is an
    explicitly replaced value ("switched from Flask") for the same purpose.
    ``subject`` is the project or thing a decision or fact is about.
    """

    text: str
    kind: str
    keyword: str
    slot: str | None = None
    old: str | None = None
    subject: str | None = None


# -- cleaning the message ---------------------------------------------------
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_LOG_LINE_RE = re.compile(
    r"^\s*(?:\$ |> |>>> |#!|\[tool (?:call|result|error)\]|Traceback \(|File \"|at [\w.$]+\(|"
    r"\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}|"
    r"(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL|CRITICAL)\b|[\w.]*(?:Error|Exception):|npm (?:ERR|WARN)|"
    r"[{\[]\s*[\"'{\[]|diff --git|@@ |[+-]{3} )"
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'“(A-Z0-9])|\n+")
_CLAUSE_RE = re.compile(r"\s*(?:;|,\s*(?:and\s+|but\s+)?(?=(?:I|I'm|I've|my|My|we|We)\b)|\s+(?:and|but)\s+(?=(?:I|I'm|I've|we)\b))\s*")
_LEAD_RE = re.compile(
    r"^(?:(?:also|oh|and|so|well|ok(?:ay)?|btw|by the way|fyi|for context|for the record|note|heads up|"
    r"just so you know|one more thing|actually|anyway|alright|right|yes|yeah|no|hi|hello|hey)\b[\s,:;!.-]*)+",
    re.I,
)
_CODE_SPAN_RE = re.compile(r"`([^`]*)`")


def message_lines(text: str) -> list[str]:
    """Prose lines of a message: fenced code, quotes, indented code, logs and tool output dropped."""
    out: list[str] = []
    fenced = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")) or _LOG_LINE_RE.match(line):
            continue
        stripped = line.strip()
        if stripped and _symbol_heavy(stripped):
            continue
        out.append(stripped)
    return out


def _symbol_heavy(line: str) -> bool:
    symbols = sum(1 for ch in line if not (ch.isalnum() or ch.isspace() or ch in ".,;:!?'’\"-()"))
    return symbols > max(3, len(line) // 6)


def sentences(text: str) -> list[str]:
    """Sentences of the message's prose (line breaks end sentences too)."""
    prose = "\n".join(message_lines(text))
    return [s.strip() for s in _SENTENCE_RE.split(prose) if s and s.strip()]


def clauses(sentence: str) -> list[str]:
    """A sentence cut where a new first-person clause starts ("I'm Dana, I run …")."""
    return [c.strip(" ,;") for c in _CLAUSE_RE.split(sentence) if c and c.strip(" ,;")]


# -- skipping -----------------------------------------------------------------
_MOMENT_RE = re.compile(
    r"\b(?:right now|for now|at the moment|today|tonight|tomorrow|yesterday|this (?:time|morning|afternoon|evening|"
    r"week|file|one|function|test|bug|branch|line|error|commit|PR)|that (?:file|one|function|test|line)|"
    r"the file|yet|anymore for now)\b",
    re.I,
)
_STATUS_RE = re.compile(r"\b(?:is (?:it )?(?:done|ready|finished|working|down|broken|failing|up)|"
                        r"status|any (?:news|update)|how(?:'s| is) it going)\b", re.I)


# -- normalizing ----------------------------------------------------------------
_ADVERBS = r"(?:now|really|also|still|usually|generally|mostly|strongly|much|actually|currently|always|never|just|only|definitely|absolutely)"
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
_MODALS = frozenset({"can", "could", "will", "would", "should", "must", "may", "might", "shall"})
_SUBJECT_FORMS = [
    (re.compile(r"^(?:I'm|I am)\b", re.I), "The user is"),
    (re.compile(r"^(?:I've|I have)\b", re.I), "The user has"),
    (re.compile(r"^(?:I'd|I would)\b", re.I), "The user would"),
    (re.compile(r"^(?:I'll|I will)\b", re.I), "The user will"),
    (re.compile(r"^I was\b"), "The user was"),
    (re.compile(r"^I (?:don't|do not)\b", re.I), "The user doesn't"),
    (re.compile(r"^I (?:can't|cannot)\b", re.I), "The user can't"),
    (re.compile(r"^My\b", re.I), "The user's"),
]
_LATER_FORMS = [
    (re.compile(r"\bI'm\b"), "they're"), (re.compile(r"\bI am\b"), "they are"), (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI'd\b"), "they'd"), (re.compile(r"\bI'll\b"), "they'll"), (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bmyself\b", re.I), "themselves"), (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bme\b"), "them"),
]


def conjugate(verb: str) -> str:
    """Third person singular of a present-tense verb (``prefer`` → ``prefers``)."""
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODALS or lower.endswith("ed") or not lower.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(clause: str) -> str:
    """Lightly turn a first-person clause into a statement about "The user"."""
    text = clause
    for pattern, replacement in _SUBJECT_FORMS:
        if pattern.match(text):
            text = pattern.sub(replacement, text, count=1)
            break
    else:
        match = re.match(rf"^I((?:\s+{_ADVERBS})*)\s+([A-Za-z]+)\b", text)
        if match:
            text = f"The user{match.group(1)} {conjugate(match.group(2))}" + text[match.end():]
    head, sep, rest = text.partition("The user")
    if sep:
        for pattern, replacement in _LATER_FORMS:
            rest = pattern.sub(replacement, rest)
        text = head + sep + rest
    return text


def finish(text: str) -> str:
    """Capitalized, single-spaced, ending in one full stop."""
    text = " ".join(text.split()).strip(" ,;:-")
    text = re.sub(r"[.!]+$", "", text).rstrip()
    return (text[:1].upper() + text[1:] + ".") if text else ""


# -- keywords ---------------------------------------------------------------------
_STOP = frozenset("""a an the to in on at for of with and or but my our their your his her its is are was were be been
use using used always never don't do not please from now on going forward that this these those it them they we i you
me user user's prefer prefers like likes love loves enjoy enjoys hate hates want would rather than as by into about
should must can will just also really still make sure any all every some more most very so than then when there here
want wants decided decide chose go with let's lets we'll switched switch moved move uses runs run is also""".split())


def keyword(phrase: str, last: bool = False) -> str:
    """A 1–3 word label from ``phrase`` (the first, or with ``last`` the last, content words)."""
    words = [w.strip(".,;:!?()\"'`’“”") for w in _CODE_SPAN_RE.sub(r"\1", phrase).split()]
    content = [w for w in words if w and w.lower() not in _STOP and not w.lower().endswith("ly") and not w.isdigit()]
    if not content:
        content = [w for w in words if w] or ["note"]
    content = [w.rstrip(".") for w in content]
    picked = content[-3:] if last else content[:3]
    label = " ".join(picked).replace("[", "").replace("]", "")
    return label or "note"


# -- patterns -------------------------------------------------------------------
_NAME = r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?"
_DEMONYM_RE = re.compile(r"^(?:[A-Z][a-z]+(?:ish|ese|ian|can|ean|ch|i)|Swiss|Greek|Thai|Dutch|French|German)$")
_NOT_NAMES = frozenset({"Sorry", "Back", "Done", "Here", "Not", "Just", "Also", "Still", "Going", "Fine", "Good",
                        "Okay", "Ok", "Sure", "Ready", "Happy", "Glad", "Confused", "Afraid", "Curious", "Busy",
                        "Tired", "New", "Trying", "Working", "Looking", "Thinking", "Wondering", "Using", "On", "In"})
_REACTION_RE = re.compile(r"^(?:it|that|this|them|those|these|how|what|the way|your|you)\b", re.I)

_IDENTITY = [
    ("name", re.compile(rf"^(?:my name is|this is)\s+(?P<v>{_NAME})$", re.I), "The user's name is {v}."),
    ("name", re.compile(rf"^(?:I'm|I am)\s+(?P<v>{_NAME})$"), None),
    ("role", re.compile(r"^(?:I'm|I am)\s+(?:an?)\s+(?!bit\b|little\b|lot\b|fan\b|big fan\b)(?P<v>.+)$", re.I), ""),
    ("employer", re.compile(rf"^I(?:\s+{_ADVERBS})*\s+work\s+(?:at|for)\s+(?P<v>.+)$", re.I), ""),
    ("role", re.compile(rf"^I(?:\s+{_ADVERBS})*\s+work\s+as\s+(?P<v>.+)$", re.I), ""),
    ("location", re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:live|reside)\s+in\s+(?P<v>.+)$", re.I), ""),
    ("location", re.compile(r"^(?:I'm|I am)\s+(?:now\s+)?based\s+in\s+(?P<v>.+)$", re.I), ""),
    ("location", re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:moved|relocated)\s+to\s+(?P<v>.+)$", re.I), ""),
    ("origin", re.compile(r"^(?:I'm|I am)\s+(?:originally\s+)?from\s+(?P<v>[A-Z].+)$"), ""),
    (None, re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:run|lead|manage|head|own|founded)\s+"
                     r"(?P<v>(?:an?|our|my)\s+.+|the\s+(?:[\w&-]+\s+){0,3}?(?:team|department|group|company|business|"
                     r"shop|store|lab|office|division|startup|studio|agency|practice|clinic)\b.*)$", re.I), ""),
    ("languages", re.compile(r"^I\s+speak\s+(?P<v>.+)$", re.I), ""),
    ("pronouns", re.compile(r"^my pronouns are\s+(?P<v>.+)$", re.I), ""),
    ("timezone", re.compile(r"^my (?:time ?zone|timezone) is\s+(?P<v>.+)$", re.I), ""),
]
_PREFERENCE = [
    re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:prefer|like|love|enjoy|hate|dislike|detest|can't stand)\s+(?P<v>.+)$", re.I),
    re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:don't|do not)(?:\s+{_ADVERBS})*\s+(?:like|want|enjoy|care for|need)\s+(?P<v>.+)$", re.I),
    re.compile(r"^I'd (?:much\s+)?rather\s+(?P<v>.+)$", re.I),
    re.compile(r"^my\s+favou?rite\s+(?P<v>.+\s+is\s+.+)$", re.I),
    re.compile(r"^(?:I'm|I am)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(?P<v>.+)$", re.I),
]
_RULE_STARTS = re.compile(
    r"^(?:please\s+)?(?:(?P<always>always|never)\b(?!\s+mind\b)|(?P<dont>don't|do not)\s+(?!worry|bother|mind|know|think|care|"
    r"forget|hesitate|get\b|have to|need to|be sorry|apologi)|(?P<from>from now on|going forward|in (?:the )?future|"
    r"henceforth)\b|(?P<please>please)\s+(?=use|answer|reply|respond|write|keep|avoid|call me|address me|format|"
    r"stick to|default to|stop|refer to)|(?P<you>you (?:should|must|shall)(?: always| never| not)?)\b|"
    r"(?P<want>I want you to (?:always|never))\b|(?P<call>call me|address me as)\b|"
    r"(?P<sure>make sure (?:to |you )?always|remember to always)\b)",
    re.I,
)
_DECISION = [
    re.compile(r"^(?:so\s+)?we(?:'ve| have)?\s+(?:finally\s+)?(?:decided|agreed|chose|picked|settled on|opted)\b", re.I),
    re.compile(r"^we(?:'ve| have)?\s+(?:switched|moved|migrated|changed)\s+(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<v>.+)$", re.I),
    re.compile(r"^we(?:'ve| have)?\s+replaced\s+(?P<old>.+?)\s+with\s+(?P<v>.+)$", re.I),
    re.compile(r"^we(?:'ll| will|'re going to| are going to)\s+(?:use|go with|stick with|switch to|move to)\b", re.I),
    re.compile(r"^we(?:'re| are)\s+(?:going with|switching to|moving to|standardi[sz]ing on)\b", re.I),
    re.compile(r"^we\s+no longer\s+use\s+(?P<old>.+?)(?:\s+(?:for|in|on)\b.*)?$", re.I),
    re.compile(rf"^I(?:\s+{_ADVERBS})*\s+(?:decided|chose)\b", re.I),
]
_LETS_RE = re.compile(r"^let's\s+(?P<v>(?:go with|use|stick with|stick to|switch to|move to|standardi[sz]e on)\b.+)$", re.I)
_INSTEAD_RE = re.compile(r"\binstead of\s+(?P<old>[\w.+#-]+(?:\s+(?!(?:for|in|on|at|as|with|because|since|and)\b)"
                         r"[\w.+#-]+)?)", re.I)
_THING = (r"(?:service|app|application|api|project|repo|repository|website|site|backend|frontend|pipeline|cluster|"
          r"platform|tool|library|cli|bot|database|db|server|system|job|worker|bucket|queue|stack|product)")
_SUBJECT_RE = re.compile(rf"\b(?:the|our|my)\s+(?P<s>(?:(?!the\b|our\b|my\b)[\w.+-]+\s+){{0,2}}?{_THING})\b", re.I)
_FACT = [
    re.compile(rf"^(?:the|our)\s+(?P<s>(?:[\w.+-]+\s+){{0,3}}?{_THING})\s+(?:runs|is running|is hosted|is deployed|"
               r"lives|is written|uses|is using|depends|talks|stores|is built|is backed|sits|serves|handles|has|needs)\b",
               re.I),
    re.compile(r"^(?P<s>(?!I\b|We\b|It\b|This\b|That\b|The\b|You\b|He\b|She\b|They\b|There\b|Our\b|My\b)"
               r"[A-Z][\w.+-]*(?:\s+[A-Z][\w.+-]*)?)\s+(?:uses|runs on|runs in|is written in|is built (?:with|on)|"
               r"is deployed (?:to|on)|depends on|is hosted (?:on|in)|stores)\b"),
    re.compile(r"^our\s+(?:deadline|launch date|release date|budget|target date|due date)(?:\s+for\s+(?P<s>.+?))?\s+is\b",
               re.I),
    re.compile(r"^the\s+(?:deadline|launch date|release date|due date)\s+for\s+(?P<s>.+?)\s+is\b", re.I),
    re.compile(r"^we\s+(?:use|run|deploy|host)\s+(?P<v>.+)$", re.I),
]
_STALE_FACT_RE = re.compile(r"\b(?:down|broken|failing|flaky|slow|done|finished|fixed|ready)\b", re.I)


def _strip_lead(clause: str) -> str:
    return _LEAD_RE.sub("", clause).strip()


def _subject(text: str, match: re.Match[str] | None = None) -> str | None:
    if match is not None and "s" in match.groupdict() and match.group("s"):
        return _clean_subject(match.group("s"))
    found = _SUBJECT_RE.search(text)
    return _clean_subject(found.group("s")) if found else None


def _clean_subject(subject: str) -> str:
    words = subject.split()
    while words and words[0].lower() in ("new", "old", "current", "main", "whole", "entire"):
        words.pop(0)
    return " ".join(words).strip(".,;:")


def _identity(clause: str) -> Statement | None:
    for slot, pattern, template in _IDENTITY:
        match = pattern.match(clause)
        if not match:
            continue
        value = match.group("v").strip(" .!")
        if template is None:  # "I'm X": a name, or a nationality
            first = value.split()[0]
            if first in _NOT_NAMES:
                return None
            if _DEMONYM_RE.match(first):
                return Statement(finish(f"The user is {value}"), "identity", value, "nationality")
            return Statement(finish(f"The user's name is {value}"), "identity", value, "name")
        if template:
            return Statement(finish(template.format(v=value)), "identity", keyword(value), slot)
        if slot == "role" and clause.lower().startswith(("i'm a", "i am a")) and len(value.split()) > 6:
            return None
        return Statement(finish(third_person(clause)), "identity", keyword(value), slot)
    return None


def _preference(clause: str) -> Statement | None:
    for pattern in _PREFERENCE:
        match = pattern.match(clause)
        if match:
            value = match.group("v")
            if _REACTION_RE.match(value) or len(value.split()) > 25:
                return None
            return Statement(finish(third_person(clause)), "preference", keyword(value))
    return None


def _rule(clause: str) -> Statement | None:
    match = _RULE_STARTS.match(clause)
    if not match:
        return None
    text = clause
    if match.group("please") or (text.lower().startswith("please ") and not match.group("you")):
        text = re.sub(r"^please\s+", "", text, flags=re.I)
    rest = clause[match.end():]
    return Statement(finish(text), "rule", keyword(rest or clause, last=True))


def _decision(clause: str) -> Statement | None:
    lets = _LETS_RE.match(clause)
    if lets:
        text = finish(f"We decided to {lets.group('v')}")
        return Statement(text, "decision", _choice(lets.group("v")), subject=_subject(clause))
    for pattern in _DECISION:
        match = pattern.match(clause)
        if not match:
            continue
        groups = match.groupdict()
        old = groups.get("old") or (_INSTEAD_RE.search(clause).group("old") if _INSTEAD_RE.search(clause) else None)
        value = groups.get("v") or clause[match.end():]
        text = finish(third_person(clause) if clause.lower().startswith("i ") else clause)
        return Statement(text, "decision", _choice(value or clause), old=_clean_value(old), subject=_subject(clause))
    return None


def _clean_value(value: str | None) -> str | None:
    if not value:
        return None
    value = re.sub(r"^(?:the|a|an|our|using)\s+", "", value.strip(" .,"), flags=re.I)
    return value or None


def _choice(phrase: str) -> str:
    """The thing decided on: its capitalized or code-spanned name, else its first content words."""
    phrase = re.split(r"\s+(?:for|in|on|because|since|as)\s+(?:the|our|my)\b", phrase)[0]
    names = re.findall(r"`([^`]+)`|\b([A-Z][\w.+#-]*(?:\s+[A-Z][\w.+#-]*)?)", phrase)
    for code, name in names:
        if code or name not in ("I", "We"):
            return (code or name).strip()
    return keyword(phrase)


def _fact(clause: str) -> Statement | None:
    for pattern in _FACT:
        match = pattern.match(clause)
        if not match:
            continue
        if _STALE_FACT_RE.search(clause[match.end() - 8:]) and " is " in clause[match.end() - 8:]:
            return None
        subject = _subject(clause, match)
        return Statement(finish(clause), "fact", keyword(subject or clause), subject=subject)
    return None


def classify_clause(clause: str) -> Statement | None:
    """The durable statement in one clause, or None (questions, chit-chat, procedure, moment-bound)."""
    clause = _strip_lead(clause.strip())
    if not clause or clause.endswith("?"):
        return None
    clause = re.sub(r"[\s.!]+$", "", clause)
    if len(clause.split()) < 2:
        return None
    if _STATUS_RE.search(clause):
        return None
    rule = _rule(clause)
    if rule is not None:
        return None if _MOMENT_RE.search(clause) and not re.match(r"^(?:always|never|from now on)", clause, re.I) else rule
    if _MOMENT_RE.search(clause):
        return None
    for extract in (_identity, _preference, _decision, _fact):
        statement = extract(clause)
        if statement is not None and statement.text:
            return statement
    return None


def extract_statements(text: str) -> list[Statement]:
    """Durable statements in one message of the person's, in order, without repeats."""
    out: list[Statement] = []
    seen: set[str] = set()
    for sentence in sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in clauses(_strip_lead(sentence)):
            statement = classify_clause(clause)
            if statement is not None and statement.text.lower() not in seen:
                seen.add(statement.text.lower())
                out.append(statement)
    return out
