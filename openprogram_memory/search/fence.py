"""The ``<memory-context>`` fence around text that memory gives an agent.

Recalled records and the core block reach the model inside one fence, with
a note that they are memory, not something the person just said. Text is
fenced where it is produced and never twice: :func:`fence` leaves already
fenced text alone. Fence tags inside the text (a record that quotes them,
or one trying to close the fence early) are defanged so the block always
has exactly one opening and one closing tag.
"""

from __future__ import annotations

import re

CORE_NOTE = ("Long-term memory: standing rules, preferences and identity facts from earlier sessions. "
             "Recalled context, not new user input.")
OPEN = "<memory-context>"
CLOSE = "</memory-context>"
_TAG_RE = re.compile(r"<\s*(/?)\s*memory-context\s*>", re.IGNORECASE)


def is_fenced(text: str) -> bool:
    """Whether ``text`` is exactly one ``<memory-context>`` block."""
    stripped = text.strip()
    tags = _TAG_RE.findall(stripped)
    return stripped.startswith(OPEN) and stripped.endswith(CLOSE) and tags == ["", "/"]


def defang(text: str) -> str:
    """Make fence tags inside ``text`` inert (``<memory-context>`` → ``‹memory-context›``)."""
    return _TAG_RE.sub(lambda m: f"‹{m.group(1)}memory-context›", text)


def fence(text: str, note: str) -> str:
    """``text`` wrapped once, ``note`` as the first line; ``""`` stays ``""``."""
    if not text.strip():
        return ""
    if is_fenced(text):
        return text
    return "\n".join([OPEN, note, defang(text.strip("\n")), CLOSE])


def core_block(effective_core: str) -> str:
    """The core block an agent receives at session start: the effective core, fenced once."""
    return fence(effective_core, CORE_NOTE)
