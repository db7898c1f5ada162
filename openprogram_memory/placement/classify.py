"""What a statement is for: the small, explainable classifier behind core cleanup.

The core block (``topics/core.md``) keeps only what most future sessions
need — standing rules, preferences and identity facts (design §05). This
module sorts one statement into ``rule``, ``preference``, ``identity``,
``project`` or ``other`` with ordered, readable rules; the first rule that
fires wins and :func:`explain_statement` says which one it was:

1. **project (named)** — names a project: ``project X`` / ``X project`` /
   ``the X repo``, a known project name, or the words project, repo,
   repository, codebase. A project-scoped rule is project content.
2. **rule** — a standing instruction: starts with an imperative (always,
   never, don't, use, answer, reply, ping, round, …, optionally after
   "please"); says what to do when something happens ("When you draft
   emails, keep them short.", "If I paste a ticket, …", "If a release
   needs signing, ping Kwabena."); a ban or limit without a verb ("No
   emojis.", "Metric units only."); what everything of a kind must have
   ("Every migration needs a rollback script."); or tells the assistant
   what it must/should do. A lead-in that says the rest holds from now on
   ("Going forward, …", "From now on, …", "In general, …", "2) …") is
   read past first.
3. **project (progress)** — reports progress or status of work: shipped,
   released, deployed, merged, fixed, implemented, milestone, sprint,
   deadline, PR #12, v1.2 …
4. **other (stale)** — passing status that will not stay true: today,
   right now, this week (not "as of this week"), at the moment, for now,
   is down …
5. **preference** — likes, dislikes, prefers, favourite, would rather,
   finds …, go-to, wants, works best, is fine, X over Y, X > Y, "make the
   user's eyes bleed", "a tea person" …
6. **identity** — who the person is: name, role ("is the lab manager",
   "has been made head nurse as of this week", "does hydrological
   modelling", "Started at Nordvik last week"),
   home ("moved to Harrogate"), employer ("joined Babelfisk AB", "works
   for …", "left Siemens"), languages, pronouns, time zone, "I am …",
   "X is a …".
7. **rule (modal)** — "always", "never", "must", "should", "needs to",
   "has to" or "everywhere" anywhere ("Commit messages should follow
   conventional commits.", "Type hints everywhere.").
8. **other** — everything else.

The writer's rules extractor may reuse :func:`classify_statement`.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Literal

Category = Literal["rule", "preference", "identity", "project", "other"]
CATEGORIES: tuple[str, ...] = ("rule", "preference", "identity", "project", "other")

# a project name: Capitalized, or quoted/backticked (then any case)
_NAME = r"(?:[`\"'“]([\w.+-]+)[`\"'”]|([A-Z][\w.+-]*))"
_PROJECT_NAME_RES = (
    re.compile(rf"(?i:\bproject)\s+{_NAME}"),
    re.compile(rf"{_NAME}\s+(?i:project|repo|repository|codebase)\b"),
    re.compile(rf"(?i:\b(?:repo|repository))\s+{_NAME}"),
)
_NOT_NAMES = frozenset({
    "the", "a", "an", "this", "that", "my", "our", "your", "their", "his", "her", "its", "new", "old", "current",
    "main", "whole", "same", "each", "every", "any", "side", "open", "source", "personal", "work", "team", "git",
    "of", "for", "in", "on", "to", "and", "or", "is", "was", "will", "be", "per",
})
_PROJECT_WORD_RE = re.compile(r"\b(projects?|repo|repos|repository|repositories|codebase)\b", re.I)
_IMPERATIVE_RE = re.compile(
    r"^(?:for\s+(?:[\w'’-]+\s+){0,4}?[\w'’-]+s,?\s+)?"  # ("For emails to clients, keep it warm but short.")
    r"(?:please\s+)?(?:always|never|don't|do\s+not|do|use|avoid|answer|reply|respond|write|keep|ask|check|"
    r"make\s+sure|remember|be|follow|report|cite|include|explain|address|call\s+me|refer\s+to|prefer\s+to\s+\w+\s+in|"
    r"stop|start|try|run|put|show|give|say|speak|talk|format|send|tell|confirm|verify|double-check|"
    r"summari[sz]e|list|mention|skip|limit|default\s+to|sign|cc|tag|flag|loop\s+in|"
    r"ping|convert|pick|stick|assume|add|treat|leave|pull|turn|route|generate|pin|factor|aim|sort|spell|round|"
    r"comment|quote|rename|rewrite|break|drop|freeze|bold|batch|go\s+easy|remind|page|mask|highlight|translate|"
    r"ignore|wrap|split|prefix|group|indent|lowercase|capitali[sz]e|trim|strip|label|warn|point\s+out|"
    r"could\s+you|can\s+you|kindly)\b(?!\s+(?:of|is|was|are|\d)\b)",
    re.I,
)
# a lead-in that says the rest holds from now on ("Going forward, when you …", "From now on: …", "2) …")
_LEAD_IN_RE = re.compile(r"^(?:(?:going\s+forward|from\s+now\s+on|in\s+(?:the\s+)?future|in\s+general|\d+[).]|just|pls|abeg)[,:]?\s+)+",
                         re.I)
# what to do when something happens, said to the assistant ("When you draft emails, keep them short.",
# "If I paste a ticket, summarise it first.")
_WHEN = r"when(?:ever)?|if|any\s*time|every\s*time|each\s+time|before|after"  # (the words a condition starts with)
_CONDITIONAL_RE = re.compile(
    rf"^(?:{_WHEN})\s+(?:you|u|I\s+(?:ask|send|paste|say|share|forward))\b",
    re.I,
)
_CLAUSE_RE = re.compile(rf"^(?:{_WHEN}|once|unless)\s+[^,;:]{{1,80}}[,;:]\s*", re.I)
# what every thing of a kind must do or have ("Any change under safety/ needs a line in SAFETY_CHANGELOG.md.")
_EVERY_RE = re.compile(r"^(?:any|anything|every|everything|nothing|each|all)\b[^.;]{0,80}?\b(?:needs?|should|must|"
                       r"has\s+to|have\s+to|goes|go|gets|stays?)\b", re.I)
# a ban said without a verb ("No emojis.", "No force unwraps outside of tests please.")
_BAN_RE = re.compile(r"\bonly(?:\s+please|\s+pls)?[.!]?$|^no\s+(?!(?:one|body|idea|problem|problems|worries|rush|thanks|way|longer|matter|doubt|luck|"
                     r"need\s+to\s+(?:worry|rush))\b)\w", re.I)


def _instruction_after_clause(text: str) -> re.Match[str] | None:
    """The instruction after a condition ("If a release needs signing, ping Kwabena.")."""
    clause = _CLAUSE_RE.match(text)
    return _IMPERATIVE_RE.match(text[clause.end():]) if clause else None


_ADDRESSED_RE = re.compile(
    r"\b(?:you|the\s+assistant|the\s+agent|the\s+model|assistants?)\s+(?:must|should|shall|need\s+to|has\s+to|"
    r"have\s+to|may\s+not|must\s+not|should\s+not|is\s+not\s+allowed|are\s+not\s+allowed)\b|"
    r"\buser\s+would\s+love\s+it\s+if\s+you\b",  # ("The user would love it if you kept …")
    re.I,
)
_PROGRESS_RE = re.compile(
    r"\b(?:shipped|released|deployed|merged|fixed|implemented|refactored|migrated|finished|completed|"
    r"launched|rolled\s+out|in\s+progress|wip|milestone|sprint|deadline|roadmap|backlog|"
    r"pull\s+request|PR\s*#?\d+|issue\s*#\d+|ticket\s*#?\d+|v\d+(?:\.\d+)+|version\s+\d+(?:\.\d+)*)\b",
    re.I,
)
_PREFERENCE_RE = re.compile(
    r"(?i:\b(?:prefers?|preferred|preference|enjoys?|dislikes?|hates?|can't\s+stand|cannot\s+stand|"
    r"favou?rite|would\s+(?:\w+\s+)?rather|rather\s+than|fan\s+of|finds|loathes?|hated|go-to|wants|would\s+like|"
    r"works?\s+(?:\w+\s+)?(?:best|better)|(?:a|an)\s+[\w-]+\s+person|(?:is|are)\s+fine|(?:is|are)\s+best|"
    r"(?:makes?|drives?)\s+the\s+user|over\s+(?!(?:the|a|an|to|there|here)\b)[a-z]+|"
    r"mostly\s+(?:writes|drafts)|can't\s+bear|happiest|comfortable\s+with|"
    r"tends\s+to\s+like|fond\s+of)\b|\s>\s)"
    # the tools the person works with ("The user uses PyTorch Geometric, not DGL", "… writes everything in Go")
    r"|\b(?:[Ii]|[Uu]ser)\s+(?:\w+ly\s+)?(?:uses?|writes?\s+(?:everything|all\s+(?:\w+\s+){0,2}?\w+)\s+in)\b"
    r"|\b(?:[Ii]|[Ww]e|[Hh]e|[Ss]he|[Tt]hey|[Uu]ser|(?!(?:Looks|Seems|Sounds|Feels|Just|Much|More|Something)\b)[A-Z][a-z]+)\s+(?i:(?:really|also|genuinely|don't|doesn't|do\s+not|does)\s+){0,2}"
    r"(?i:like|likes|love|loves)\b"
)
_STALE_RE = re.compile(
    r"\b(?:today|tonight|yesterday|tomorrow|right\s+now|(?<!as of )(?<!since )this\s+(?:week|morning|afternoon|evening|month)|"
    r"at\s+the\s+moment|for\s+now|currently\s+(?:down|broken|failing|running|blocked|waiting)|"
    r"is\s+(?:down|broken|failing)|temporar(?:y|ily))\b",
    re.I,
)
# a field of work ("I do data engineering at …", "The user does data science."): what the person does for a living
WORK_FIELD = (r"(?:engineering|development|design|research|analytics|science|marketing|sales|security|testing|"
              r"consulting|ops|support)")
# what a person is at work or in a club ("The user is the lab manager.", "The user is now marketing manager.")
_ROLE_NOUN = (r"(?:lead|manager|engineer|developer|dev|owner|chair|coordinator|officer|director|founder|scientist|"
              r"analyst|designer|teacher|nurse|doctor|writer|editor|baker|chef|coach|specialist|consultant|architect|"
              r"admin|administrator|intern|student|researcher|professor|lecturer|member|secretary|treasurer|"
              r"paralegal|lawyer|accountant|technician|reporter|clerk|planner|supervisor|volunteer|trainee|apprentice|"
              r"sre|trader|midwife|person)s?")
_IDENTITY_RE = re.compile(
    r"\b(?:my\s+name\s+is|name\s+is|is\s+called|i\s+am|i'm|i\s+was|lives?\s+in|based\s+in|born|grew\s+up|"
    r"works?\s+(?:(?:part[- ]time|full[- ]time|freelance)\s+)?as|works?\s+at|user\s+is\s+the\s+(?-i:[A-Z]{2,4})\b|stud(?:y|ies)\s+at|user\s+does\s+(?:[\w-]+\s+){0,2}?"
    rf"{WORK_FIELD}|"
    r"(?:user|I)\s+(?:\w+ly\s+)?works?\s+on|is\s+an?|am\s+an?|speaks?|native|pronouns?|time\s*zone|"
    r"birthday|years\s+old|married|partner|daughter|son|wife|husband|(?:runs|owns)\s+an?|"
    r"(?:runs|leads|manages|heads)\s+the\s+(?:[\w&-]+\s+){0,3}?(?:team|department|group|company|business|shop|lab)|"
    r"user\s+is\s+(?:now\s+|currently\s+)?in\s+(?-i:[A-Z])\w*|(?:teaches|lectures)\s+\w+|"
    r"(?:is|am)\s+(?:the\s+)?head\s+of|(?:joined|(?:moved|switched|transferred)\s+to)\s+(?:the\s+)?(?:[\w&-]+\s+){0,3}?"
    r"(?:team|squad|group|department|lab)|"
    r"(?:is|am)\s+(?:on|in|part\s+of|a\s+member\s+of)\s+the\s+(?:[\w&-]+\s+){0,3}?(?:team|squad|group|department)|"
    r"from\s+[A-Z]\w*|"
    rf"(?:is|was|am|been\s+made|promoted\s+to|became)\s+(?:[\w&'’-]+\s+){{0,5}}?{_ROLE_NOUN}|"
    r"(?:moved|relocated)\s+to\s+(?-i:[A-Z])\w*|joined\s+(?-i:[A-Z])\w*|(?:works?|working)\s+(?:for|as|at)|"
    r"living\s+in|(?:first|second|native)\s+language|(?:left|quit)\s+(?-i:[A-Z])\w*|"
    r"(?:manages|runs|owns|coordinates|maintains)\s+(?:the\s+|a\s+|an\s+)?(?:[\w&'’-]+\s+){0,3}?"
    r"(?-i:[A-Z])\w*|"
    r"(?:is|am)\s+(?:now\s+)?(?:at|with)\s+(?:the\s+)?(?-i:[A-Z])\w*|"
    r"^the\s+user\s+(?:mostly\s+|just\s+)?(?:does|handles)\b|"  # (the work a person does: "The user does hydrological
    # modelling.", "The user handles the admin side.")
    r"^(?:started|freelancing|working)\s+(?:at|as|out\s+of|full[- ]time)\b|^still\s+(?:in|at)\s+(?-i:[A-Z])\w*)\b",
    re.I,
)
_MODAL_RE = re.compile(r"\b(?:always|never|must|mustn't|must\s+not|should|(?<!no )needs?\s+to|ha(?:s|ve)\s+to|"
                       r"everywhere)\b", re.I)


def project_name(text: str, known: Iterable[str] = ()) -> str | None:
    """The project a statement names, as written, or None.

    ``known`` are project names already in the tree (titles or slugs of
    ``topics/projects/*.md``); a match against them wins.
    """
    for name in sorted({k for k in known if k}, key=len, reverse=True):
        variants = {name, name.replace("-", " "), name.replace(" ", "-")}
        for variant in variants:
            if re.search(rf"(?<![\w-]){re.escape(variant)}(?![\w-])", text, re.I):
                return name
    for pattern in _PROJECT_NAME_RES:
        for match in pattern.finditer(text):
            candidate = (match.group(1) or match.group(2)).strip(".-+")
            if candidate and candidate.lower() not in _NOT_NAMES and not candidate.isdigit():
                return candidate
    return None


# After a named project: the first signal that matches decides, in this order (a stale status beats a preference).
_SIGNALS: tuple[tuple[Callable[[str], re.Match[str] | None], Category, str], ...] = (
    (_PROJECT_WORD_RE.search, "project", "is about a project ({!r})"),
    (_IMPERATIVE_RE.match, "rule", "a standing instruction (starts with {!r})"),
    (_CONDITIONAL_RE.match, "rule", "says what to do when something happens ({!r})"),
    (_instruction_after_clause, "rule", "a standing instruction after its condition ({!r})"),
    (_BAN_RE.search, "rule", "a standing ban ({!r})"),
    (_EVERY_RE.match, "rule", "a standing rule for every case ({!r})"),
    (_ADDRESSED_RE.search, "rule", "tells the assistant what to do ({!r})"),
    (_PROGRESS_RE.search, "project", "reports work progress ({!r})"),
    (_STALE_RE.search, "other", "a passing status that will go stale ({!r})"),
    (_PREFERENCE_RE.search, "preference", "states a preference ({!r})"),
    (_IDENTITY_RE.search, "identity", "says who the person is ({!r})"),
    (_MODAL_RE.search, "rule", "a standing rule ({!r})"),
)


# where the person works is who they are, even where a project topic bears the employer's name ("The user works at
# Larkspur Books." beside topics/projects/larkspur-books.md)
_WORKS_AT_RE = re.compile(r"^the\s+user\s+(?:now\s+)?works\s+(?:at|for)\b", re.I)


def explain_statement(text: str, known_projects: Iterable[str] = ()) -> tuple[Category, str]:
    """``(category, reason)``: the category and the rule that decided it."""
    plain = _LEAD_IN_RE.sub("", " ".join(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).split()))
    name = project_name(plain, known_projects)
    if name is not None and not _WORKS_AT_RE.match(plain):
        return "project", f"names the project {name!r}"
    for find, category, reason in _SIGNALS:
        hit = find(plain)
        if hit:
            return category, reason.format(hit.group(0))
    return "other", "no rule, preference, identity or project signal"


def classify_statement(text: str, known_projects: Iterable[str] = ()) -> Category:
    """``"rule"|"preference"|"identity"|"project"|"other"`` for one statement."""
    return explain_statement(text, known_projects)[0]


CORE_CATEGORIES: tuple[str, ...] = ("rule", "preference", "identity")


def core_rank(category: str) -> int:
    """Render order in the core: rules first, then preferences, then identity."""
    return CORE_CATEGORIES.index(category) if category in CORE_CATEGORIES else len(CORE_CATEGORIES)
