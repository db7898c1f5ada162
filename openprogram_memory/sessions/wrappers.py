"""The runtime's wrapper elements in a user message, told apart from what the person typed.

Agents inject text in the user role, wrapped in an element of their own
(Claude Code's ``<system-reminder>…</system-reminder>``, ``<command-name>``,
``<local-command-stdout>`` …; codex's ``<environment_context>``,
``<user_shell_command>``, ``<turn_aborted>`` …), sometimes in the same
message as the person's words, before or after them. A message is the
person's when something is left once every whole (closed) wrapper element
is taken out (:func:`without_wrappers`) and that rest is not itself one of
the runtime's forms; a message of nothing but wrapper elements is the
runtime's (:func:`injected_kind`). Words a runtime only wraps (Claude
Code's ``#`` memory shortcut, :data:`TYPED_TAGS`) are the person's, read
without their tags (:func:`typed_words`). The importers classify with this and
the writer's ``segment.agent_generated`` reads the same rest, so a turn the
importer keeps is one the writer reads.
"""

from __future__ import annotations

import re
from typing import Sequence

# Elements only a runtime writes, never a person. Claude Code: system reminders, slash-command and ``!`` shell
# echoes with their output, hook output, IDE notices; codex: its contextual user fragments
# (codex-rs/core model_visible_context.rs).
WRAPPER_TAGS = (
    "local-command-caveat", "command-name", "command-message", "command-args", "local-command-stdout",
    "local-command-stderr", "command-stdout", "system-reminder", "user-prompt-submit-hook", "bash-input",
    "bash-stdout", "bash-stderr", "task-notification", "ide_opened_file", "ide_selection",
    "environment_context", "user_instructions", "user_shell_command", "turn_aborted", "skill", "plugins",
    "subagents", "subagent_notification",
)
# How a runtime opens the compaction summary it sends in the user role: Claude Code's (a transcript older than its
# ``isCompactSummary`` flag has only these words to tell it by) and codex's hand-off
# (codex-rs/core/templates/compact/summary_prefix.md). The importers mark what starts so ``compaction_summary``.
COMPACTION_SUMMARY_STARTS = (
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem",
)
# Elements a runtime wraps around words the person typed, which stay theirs: Claude Code's ``#`` memory shortcut (the
# person types "# always use pnpm here" and the transcript holds ``<user-memory-input>always use pnpm
# here</user-memory-input>``, the most explicit "remember this" there is).
TYPED_TAGS = ("user-memory-input",)
_WRAPPER_ELEMENT_RE = re.compile(rf"<({'|'.join(map(re.escape, WRAPPER_TAGS))})(?:\s[^>]*)?>.*?</\1\s*>", re.S)
_TYPED_ELEMENT_RE = re.compile(rf"<({'|'.join(map(re.escape, TYPED_TAGS))})(?:\s[^>]*)?>(.*?)</\1\s*>", re.S)


def typed_words(text: str) -> str:
    """``text`` with each whole element of :data:`TYPED_TAGS` replaced by the person's words in it, on lines of their
    own."""
    return _TYPED_ELEMENT_RE.sub(lambda element: f"\n{element.group(2).strip()}\n", text)


def without_wrappers(text: str) -> str:
    """``text`` with every whole wrapper element taken out and the person's words out of their
    :data:`TYPED_TAGS` element; an element that is never closed stays."""
    return typed_words(_WRAPPER_ELEMENT_RE.sub("", text))


def injected_kind(text: str, kinds: Sequence[tuple[tuple[str, ...], str]]) -> str | None:
    """The runtime-scheduled ``kind`` of a user message the runtime wrote, or None when the person typed it.

    ``kinds`` maps what an injected message starts with to its kind, first match wins. It is read on what
    is left once whole wrapper elements are out, so a reminder before the person's words does not make
    the message the runtime's (an element never closed, or a known prose form, still does); a message of
    nothing but wrapper elements is read whole, and is ``meta`` when no prefix names it.
    """
    whole = text.lstrip()
    typed = without_wrappers(text).lstrip()
    head = typed or whole
    for prefixes, kind in kinds:
        if head.startswith(prefixes):
            return kind
    return "meta" if whole and not typed else None
