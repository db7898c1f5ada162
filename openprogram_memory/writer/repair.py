"""Repair once (design §03): the rejected text plus one concrete fix for the rule it broke.

When validation rejects a writer's edit, the writer gets exactly one more
run, on a fresh staging copy (the baseline re-read), with a message built
here: what was rejected (file, line, rule, the engine's words), the
rejected text of that file, and one fix for that rule.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..failures import FailureCode, MemoryFailure
from .backend import BatchTurn

# Validation rejections a writer can fix; anything else passes through.
REPAIRABLE = frozenset({
    FailureCode.INVALID_TOPIC_FORMAT,
    FailureCode.MISSING_SOURCE,
    FailureCode.APPEND_ONLY_REQUIRED,
    FailureCode.INVALID_ARGUMENT,
})
MAX_REJECTED_CHARS = 8000

FIXES = {
    "uncited-text": "Every paragraph in a topic is a record: end it with a citation such as [^e1] and define "
                    "[^e1]: Time: `YYYY-MM-DD`; Sources: [keyword](<source id from this batch>) in the same file "
                    "— or delete the paragraph if it is not worth keeping.",
    "missing-block-id": "Leave new records without a ^id (the runtime assigns one) and keep every existing "
                        "^id at the end of its paragraph.",
    "no-text-before-citation": "Put the record's text before its citation: `Text.[^e1]`.",
    "text-after-citation": "Citations end a record: move any text after the last [^…] before it.",
    "undefined-citation": "Define every citation you use in the same file: "
                          "[^e1]: Time: `YYYY-MM-DD`; Sources: [keyword](<source id>).",
    "unused-definition": "Delete the footnote definition that no record cites any more.",
    "duplicate-definition": "Define each footnote label once per file; give a second definition a new label.",
    "malformed-definition": "Write definitions exactly as [^e1]: Time: `YYYY-MM-DD`; Sources: [keyword](<source id>).",
    "bad-date": "Use the cited turn's date as YYYY-MM-DD (a real calendar date), YYYY-MM, YYYY or `undated`.",
    "empty-label": "Give every source link a short keyword: [metric units](<source id>).",
    "bad-source-target": "Link sources by their id from this batch, e.g. [keyword](openprogram/<thread>/<message>).",
    "unknown-source": "Cite only the source ids of this batch, copied exactly.",
    "missing-source": "Cite only the source ids of this batch, copied exactly.",
    "symlinked-source": "Cite only the source ids of this batch, copied exactly.",
    "lost-block-id": "Keep the named ^id at the end of the paragraph you rewrote or moved.",
    "duplicate-id": "A block ID may appear once in the whole tree: keep it on one paragraph only.",
    "dangling-link": "Remove the link, or point it at a record that exists: [text](file.md#^id).",
    "symlink": "Write a regular topic file, not a symlink.",
    "append-only": "Never touch sources/: it is append-only; edit only topics/**/*.md.",
}
GENERIC_FIX = "Follow the record format exactly and edit only topics/**/*.md."


def concrete_fix(failure: MemoryFailure, turns: Sequence[BatchTurn] = ()) -> str:
    """The one fix for the rule ``failure`` names (batch source ids spelled out where they help)."""
    rule = str(failure.details.get("rule") or "")
    if not rule and failure.code is FailureCode.MISSING_SOURCE:
        rule = "missing-source"
    if not rule and failure.code is FailureCode.APPEND_ONLY_REQUIRED:
        rule = "append-only"
    fix = FIXES.get(rule, GENERIC_FIX)
    if rule == "lost-block-id" and failure.details.get("block_id"):
        fix = f"Keep ^{failure.details['block_id']} at the end of the paragraph you rewrote or moved."
    if rule in ("unknown-source", "missing-source", "symlinked-source", "bad-source-target", "uncited-text") and turns:
        fix += " This batch's source ids: " + ", ".join(t.source_id for t in turns) + "."
    return fix


def rejection_message(failure: MemoryFailure, staged: dict[str, str | None], turns: Sequence[BatchTurn] = ()) -> str:
    """What a repair run is told: the rejection, the rejected text, and the fix."""
    rule = failure.details.get("rule") or failure.code.value
    lines = [f"Your edit was rejected ({failure.code.value}, rule {rule}): {failure.message}"]
    path = failure.details.get("file")
    texts = [(path, staged.get(path))] if path in staged else [(p, t) for p, t in sorted(staged.items())]
    for rel, text in texts:
        if text is None:
            lines.append(f"\nYou deleted {rel}.")
            continue
        shown = text if len(text) <= MAX_REJECTED_CHARS else text[:MAX_REJECTED_CHARS] + "\n…(cut)"
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", shown)), default=0))
        lines.append(f"\nRejected text of {rel}:\n{fence}markdown\n{shown}\n{fence}")
    lines.append(f"\nFix: {concrete_fix(failure, turns)}")
    return "\n".join(lines)
