"""What is not a durable statement however it is phrased: questions, hypotheticals, reported speech, talk bound to
the moment, passing states and status.

Kept apart from the detectors (:mod:`.statements`) because both they and the corpus-trained classifier
(:mod:`.learned`, one of whose features is this verdict) read it.
"""

from __future__ import annotations

import re

from . import lexicon as lx

FIRST_I = r"(?:i|I)"
FIRST_IM = r"(?:I'm|I’m|i'm|i’m|Im|im|I am|i am)"

_QUESTION_RE = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|shall|is|are|was|were|am|have|has|had|what|what's|whats|why|how|"
    r"how's|where|which|who|whom|whose|any idea|anyone|any chance|wanna|want to|mind if|is there|are there|"
    r"when (?:is|are|was|does|do|did|will|should|can))\b(?!\s+not\b)",
    re.I,
)
_HYPOTHETICAL_RE = re.compile(
    r"^(?:if(?!\s+(?:you|a|an|the|any|anything|something|someone|there's|there is|unsure|in doubt|"
    r"I\s+(?:ask|paste|send))\b)|suppose|supposing|imagine|assuming|hypothetically|what if|in theory|maybe|perhaps|probably|"
    r"i (?:think|guess|suspect|wonder|assume|believe|feel like|bet|hope|wish)|i'm (?:not sure|guessing|wondering)|"
    r"not sure|might|could be|seems|looks like|sounds like|apparently|unless)\b|"
    r"\b(?:if (?:i|we) (?:were|had|was)|would have|could have|should have|i'd probably|i might|we might|we could|"
    r"maybe we|i'd (?:like|love) to (?:see|know|try|understand|check)|wouldn't it|in another life|someday|"
    r"one day|dream|what i think is|i (?:think|suspect|guess) (?:it's|that's|this is|the (?:problem|bug|issue|culprit)))\b",
    re.I,
)
_REPORTED_RE = re.compile(
    r"\b(?:(?<!what i )(?<!what i just )said|says|say that|told (?:me|us|him|her|them)|tells (?:me|us)|wrote (?:that|:)|writes that|asked|asks|"
    r"wrote in (?:a |the |his |her |their |our )?(?:comment|message|email|doc|ticket|slack|pr|thread)|"
    r"mentioned(?: that|:)|"
    r"according to|quote:|quoting|claims? that|the (?:comment|docstring|docs|readme|error|message|log|ticket|commit "
    r"message|linter|warning|output|prompt) (?:says|said|reads|read|states)|reads:)\b|\"[^\"]{12,}\"|“[^”]{12,}”",
    re.I,
)
_MOMENT_RE = re.compile(
    r"\b(?:right now|for now|at the moment|atm|today|tonight|tomorrow|yesterday|just now|earlier today|"
    r"this (?:morning|afternoon|evening|week|weekend|time|session|pr|mr|file|function|method|branch|commit|line|"
    r"test|bug|error|ticket|issue|one|sprint|change|diff|run|task|month|quarter|call|conversation|chat|script|"
    r"class|module|snippet|output|case|query|page|component)|that (?:file|one|function|test|line|error|bug|pr|"
    r"commit|branch|change|diff|script|class)|these (?:files|tests|errors|changes|lines)|those (?:files|tests|"
    r"errors|changes)|next (?:week|month|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?! of\b)|"
    r"for this (?!project\b)\w+|(?:from|in|on) your (?:list|answer|reply|suggestions?|options?|last message)|"
    r"your (?:first|second|third|last|other) (?:suggestion|option|answer|idea|version)|"
    r"the (?:first|second|third|last|other|previous|new|old|latest|original) (?:one|version|option|approach|"
    r"draft(?!\s+of\s+(?:every|each)\b)|suggestion|answer|idea|variant)|"  # ("the first draft of every …")
    r"just (?:(?!adopted|married|moved|joined|started|relocated|welcomed)\w+ed|came|went|broke|died|sent|(?<!what i just )said|told|ran|"
    r"made|did|found)|last (?:night|week)(?! of\b)|in a (?:minute|bit|sec|second)|"
    r"for (?:the )?(?:moment|time being)|next (?:sprint|release|quarter|year)|temporar(?:y|ily)|a minute ago|an hour ago|this year|"
    r"for this (?:pr|task|change|one|session|run|ticket|repo|refactor)|(?:until|till) (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|the weekend|tomorrow|further notice|next week|then|it's fixed)|the (?:above|following)|above|below|yet|again|so far|omg|ugh|rn|in the meantime|"
    r"meanwhile|for the rest of the (?:day|afternoon|morning|evening|week))\b",
    re.I,
)
_STATE_RE = re.compile(
    rf"^{FIRST_IM}\s+(?:so\s+|really\s+|a bit\s+|kinda\s+|super\s+|pretty\s+|very\s+|just\s+|still\s+|not\s+|also\s+)*"
    r"(?:tired|exhausted|sick|ill|hungry|busy|stuck|confused|lost|back|here|done|off|out|away|heading|going|"
    r"trying|looking|wondering|thinking|working on|about to|sorry|afraid|sure|unsure|curious|happy|glad|excited|"
    r"worried|annoyed|frustrated|late|online|offline|in a meeting|on (?:my|a) (?:phone|break|way|train|bus|plane|flight)|on mobile|"
    r"on the (?:train|bus|plane|road|go|way|move|phone|subway|tube|ferry)|"
    r"seeing|getting|running|debugging|testing|fixing|reading|writing|using|doing|having|hoping|planning|"
    r"gonna|going to|trying to|about|ready|finished|confused|blocked|waiting|new to|fine|ok|okay|good|great|"
    r"stoked|impressed|surprised|amazed|done with|over it|losing|starting|checking|pasting|attaching|sharing|"
    r"asking|wondering|in the middle|on it|on leave|on vacation|on holiday|ooo|out of office)\b",
    re.I,
)
_STATUS_RE = re.compile(
    r"\b(?:pass|passes|passing|passed|(?<!red[- /])(?<!red and )(?<!red or )(?<!red vs )(?<!anything )(?<!colour is )(?<!color is )green(?!\s+(?:tea|beans|salad|veg|vegetables|card|light|energy|onions?|peppers?|curry))|(?<!colour is )(?<!color is )red(?![- /]green)(?!\s+(?:and|or|vs)\s+green)(?!\s+(?:meat|wine|peppers?|onions?|lentils|beans|cabbage|card|light|herring|flag|tape|velvet|curry))|failing|failed|broken|fixed|merged|works now|working now|"
    r"(?:is|are) done(?!\s+(?:via|through|by|with)\b)|finished|crashed|crashing|timing out|timed out|flaky|flakes|hanging|hangs|went down|"
    r"is down|are down|is up|looks good|lgtm|worked(?! examples?)|didn't work|doesn't work|does not work|not working|"
    r"still failing|erroring|errored|blew up|exploded|acting up|borked|busted|a mess|messy|weird|wrong|"
    r"slow today|compiles now|deployed now|shipped|fails|times out|chokes|throws|keeps (?:failing|dropping|crashing|timing out|breaking)|symptoms?)\b",
    re.I,
)
# a condition that makes an instruction hold every time ("merge PRs only after CI is green", "only merge once …")
ONLY_WHEN = r"only (?:\w+\s+){0,2}?(?:after|once|when|if)"
STANDING_RE = re.compile(r"\b(?:always|never|ever|don't|do not|every|each|whenever|from now on|going forward|moving forward|"
                          rf"in (?:the )?future|by default|as a rule|at all times|{ONLY_WHEN})\b", re.I)


RANGE_RE = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)?\s*(?:[–-]|to)\s*\d{1,2}(?::\d{2})?\s*(?:am|pm)?\b|"
                       r"\b(?:usually|normally|typically|mostly)\b.*\b(?:online|offline|away|off|around|available)\b", re.I)


_WHEN_DONE_RE = re.compile(r"^(?:yesterday|today|last (?:night|week)|this (?:morning|week|month|quarter|year)|"
                           r"next (?:sprint|release|quarter|year|month))$", re.I)
_EVENT_VERB_RE = re.compile(r"\b(?:decided|agreed|chose|settled|voted|move|moved|relocated|joined|started|switched|migrated|"
                            r"migrating|moving|switching|dropping|adopting|deprecating|retiring|sunsetting|renaming|"
                            r"consolidating|replacing|rolling out|standardi[sz]ing|"
                            r"adopted|married|promoted|hired)\b", re.I)


# a complaint about what keeps happening ("always the same OOM, every single time the job kicks off")
REASONING_RE = re.compile(r"^(?:(?:it's|its|it is|and)\s+)?(?:always|again) the same\b|\bevery single time\b|"
                            r"^(?:the\s+)?(?:main\s+)?reasons?\s+(?:is|was|being|for that is)\b|"
                            r"^(?:the|my|our)\s+(?:\w+\s+)?(?:downside|upside|catch|problem|issue|concern|worry|argument|"
                            r"point|idea|question|trick|thing)(?:\s+\w+){0,2}\s+(?:is|was)\s+(?:that|to|whether)\b",
                            re.I)  # (and a reason, or an argument being made)


def is_negative(clause: str) -> bool:
    """Questions, hypotheticals, reported speech, moment-bound talk, passing states and status."""
    if clause.endswith("?") or _QUESTION_RE.match(clause) or REASONING_RE.search(clause):
        return True
    if _HYPOTHETICAL_RE.search(clause) or _REPORTED_RE.search(clause):
        return True
    moment = _MOMENT_RE.search(clause)
    if moment and not (_WHEN_DONE_RE.search(moment.group(0)) and _EVENT_VERB_RE.search(clause)
                       and re.match(r"^(?:we|i|the team|our team|(?:our|the) plan is to|"
                                    r"(?-i:[A-Z][a-z]+) (?=(?:joined|started)\b.*\bas (?:a|an|our)\b))\b", clause, re.I)):
        return True
    if _STATE_RE.match(clause) and not (lx.RECURRENCE_RE.search(clause) or RANGE_RE.search(clause)):
        return True
    return bool(_STATUS_RE.search(clause)) and not STANDING_RE.search(clause)
