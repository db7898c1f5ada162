"""How a kept clause is phrased as a record (one rule, applied to every kind).

The person's words are kept; a first-person subject becomes "The user"
with the verb agreed ("i prefer metric units" → "The user prefers metric
units."; "my manager Tom signs off releases" → "The user's manager Tom
signs off releases."); later "my/me/I" become "their/them/they";
instructions stay imperative without "please" ("Please use British
spelling" → "Use British spelling."); "we/our" stay as spoken; "let's X"
becomes "We decided to X.".
"""

from __future__ import annotations

import re

ADVERBS = (r"(?:now|really|also|still|usually|generally|mostly|mainly|primarily|strongly|much|actually|currently|"
           r"always|never|just|only|definitely|absolutely|honestly|personally|typically|normally|kinda|kind of|"
           r"sort of|totally|genuinely|secretly|officially|finally|recently|happily|basically|pretty much|practically|no longer)")
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "was": "was", "were": "was",
              "don't": "doesn't", "don’t": "doesn’t", "dont": "doesnt", "haven't": "hasn't", "haven’t": "hasn’t"}
_PAST = frozenset("""left went quit got made took began ran wrote built set put said told found bought sold became came
chose did had kept knew met paid sent spent stood thought won grew gave rode drove fell felt flew forgot heard held lost
meant read saw slept spoke swam taught understood woke wore hit cut let brought caught fought sought""".split())
_MODALS = frozenset({"can", "could", "will", "would", "should", "must", "may", "might", "shall", "can't", "won't",
                     "cannot", "wouldn't", "shouldn't", "couldn't", "cant", "wont", "wouldnt", "shouldnt", "couldnt"})
_SUBJECT_FORMS = [
    (re.compile(r"^(?:I'm|I’m|Im|I am)\b", re.I), "The user is"),
    (re.compile(r"^(?:I've|I’ve|Ive|I have)\b", re.I), "The user has"),
    (re.compile(r"^(?:I'd|I’d|I would)\b", re.I), "The user would"),
    (re.compile(r"^(?:I'll|I’ll|I will)\b", re.I), "The user will"),
    (re.compile(r"^I was\b", re.I), "The user was"),
    (re.compile(r"^I (?:don't|don’t|dont|do not)\b", re.I), "The user doesn't"),
    (re.compile(r"^I (?:didn't|did not)\b", re.I), "The user didn't"),
    (re.compile(r"^I (?:can't|can’t|cant|cannot)\b", re.I), "The user can't"),
    (re.compile(r"^I (?:won't|will not)\b", re.I), "The user won't"),
    (re.compile(r"^My\b", re.I), "The user's"),
    (re.compile(r"^Mine\b", re.I), "The user's"),
]
_LATER_FORMS = [
    (re.compile(r"\b(?:I'm|I’m|i'm)\b"), "they're"), (re.compile(r"\b[Ii] am\b"), "they are"),
    (re.compile(r"\b[Ii] was\b"), "they were"),
    (re.compile(r"\b(?:I've|i've)\b"), "they've"), (re.compile(r"\b(?:I'd|i'd)\b"), "they'd"),
    (re.compile(r"\b(?:I'll|i'll)\b"), "they'll"), (re.compile(r"\bI\b|(?<![\w'’.-])i(?![\w'’.-])"), "they"),
    (re.compile(r"\bmyself\b", re.I), "themselves"), (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bme\b"), "them"),
]


# a verb after "I": one word, hyphenated ("co-own") or with its "n't" ("don't", "haven't")
_VERB = r"[A-Za-z]+n['’]t\b|[A-Za-z]+(?:-[A-Za-z]+)?\b"


# present-tense verbs that end in "ed" ("I need", "I feed the cat"): not past tense
_PRESENT_ED = frozenset("need feed seed heed bleed breed speed proceed succeed exceed weed embed shed shred wed".split())


def conjugate(verb: str) -> str:
    """Third person singular of a present-tense verb (``prefer`` → ``prefers``)."""
    lower = verb.lower()
    if "-" in verb:  # "co-own" → "co-owns", "double-check" → "double-checks"
        head, _, last = verb.rpartition("-")
        return f"{head}-{conjugate(last)}"
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    past = lower.endswith("ed") and lower not in _PRESENT_ED
    if lower in _MODALS or lower in _PAST or past or lower.endswith(("n't", "n’t")) or not lower.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(clause: str) -> str:
    """Lightly turn a first-person clause into a statement about "The user"."""
    text = clause
    pair = re.match(r"^(?:my|My)\s+(\w+)\s+and\s+(?:I|i)(\s+\w.*)$", text, re.S)
    if pair:  # "my partner and I have two cats": both of them, not "… and they have"
        return f"The user and their {pair.group(1)}{pair.group(2)}"
    for pattern, replacement in _SUBJECT_FORMS:
        if pattern.match(text):
            text = pattern.sub(replacement, text, count=1)
            break
    else:
        match = re.match(rf"^I((?:\s+{ADVERBS})*)\s+({_VERB})", text, re.I)
        if match:
            text = f"The user{match.group(1)} {conjugate(match.group(2))}" + text[match.end():]
    head, sep, rest = text.partition("The user")
    if sep:
        for pattern, replacement in _LATER_FORMS:
            rest = pattern.sub(replacement, rest)
        # a second verb of the same subject ("loves Rust but hate the compile times"): said of them too
        rest = re.sub(rf"\b(and|but)\s+(?:(also|still|really)\s+)?({_SHARED_VERBS})\b",
                      lambda m: f"{m.group(1)} {m.group(2) + ' ' if m.group(2) else ''}{conjugate(m.group(3))}", rest)
        text = head + sep + rest
    return text


# verbs a person's second clause often starts with, subject carried over ("I use vim and love it")
_SHARED_VERBS = "hate|love|like|prefer|dislike|enjoy|need|want|use|avoid|speak|live|work|own|run|write|read|play"


_FIRST_WORD_RE = re.compile(r"\b(?:(?P<im>[Ii]['’]m)|(?P<ive>[Ii]['’]ve)|(?P<ill>[Ii]['’]ll)|(?P<id>[Ii]['’]d)|(?P<my>[Mm]y)|"
                            r"(?P<me>me))\b|(?P<i>(?<![\w'’-])I\b(?!-)(?!\s+(?:at|in|on|for|with|of|to)\b)|(?<![\w'’.-])i(?![\w'’.-]))")
# ("the sub-I": a title; "a Software Engineer I at Lumenfold": a grade, no one's "I")
_FIRST_FORMS = {"im": "the user is", "ive": "the user has", "ill": "the user will", "id": "the user would",
                "my": "the user's", "me": "the user", "i": "the user"}


def about_user(clause: str) -> str:
    """:func:`third_person`, also when the person is not the subject: the first "my/me/I" anywhere becomes "the
    user" ("Mornings are my coding time" → "Mornings are the user's coding time"), later ones "their/them/they"."""
    text = third_person(clause)
    if "The user" in text:
        return text
    first = _FIRST_WORD_RE.search(text)
    if first is None:
        return text
    said = _FIRST_FORMS[str(first.lastgroup)]
    rest = text[first.end():]
    verb = re.match(rf"^((?:\s+{ADVERBS})*)\s+({_VERB})", rest) if first.lastgroup == "i" else None
    if verb:  # "personally I find Makefiles easier" → "personally the user finds …"
        said += f"{verb.group(1)} {conjugate(verb.group(2))}"
        rest = rest[verb.end():]
    for pattern, replacement in _LATER_FORMS:
        rest = pattern.sub(replacement, rest)
    return text[:first.start()] + said + rest


def finish(text: str) -> str:
    """Capitalized, single-spaced, ending in one full stop; empty brackets ("dialogues (   )", not a call's "print()")
    left out."""
    text = " ".join(re.sub(r"(?<!\S)\(\s*\)", " ", text).split()).strip(" ,;:-—–")
    text = re.sub(r"[.!…]+$", "", text).rstrip(" ,;:-—–")
    if text.count('"') % 2:  # (a quote the text ends inside is closed: 'sign as "Ana Lima, CFO')
        text += '"'
    elif text.count("“") > text.count("”"):
        text += "”"
    return (text[:1].upper() + text[1:] + ".") if text else ""


_CODE_SPAN_RE = re.compile(r"`([^`]*)`")
_STOP = frozenset("""a an the to in on at for of with and or but my our their your his her its is are was were be been
use using used always never don't do not please from now on going forward that this these those it them they we i you
me user user's prefer prefers like likes love loves enjoy enjoys hate hates want would rather than as by into about
should must can will just also really still make sure any all every some more most very so than then when there here
want wants decided decide chose go with let's lets we'll switched switch moved move uses runs run is also has have
works work lives live""".split())


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


_BACK_FORMS = [
    (re.compile(r"^The user's\b"), "my"), (re.compile(r"^The user is\b"), "I'm"), (re.compile(r"^The user has\b"), "I have"),
    (re.compile(r"^The user doesn't\b"), "I don't"), (re.compile(r"^The user was\b"), "I was"),
]


def first_person(record: str) -> str:
    """A record about "The user" read back as the person said it ("The user now works at X" → "I now work at X")."""
    for pattern, replacement in _BACK_FORMS:
        if pattern.match(record):
            return pattern.sub(replacement, record, count=1)
    match = re.match(rf"^The user((?:\s+{ADVERBS})*)\s+([A-Za-z]+)\b", record)
    if not match:
        return record
    verb = match.group(2)
    if re.search(r"[^aeiou]ies$", verb):
        verb = verb[:-3] + "y"
    elif re.search(r"(?:sses|shes|ches|xes|zes|oes)$", verb):
        verb = verb[:-2]
    elif verb.endswith("s") and not verb.endswith("ss"):
        verb = verb[:-1]
    return f"I{match.group(1)} {verb}" + record[match.end():]
