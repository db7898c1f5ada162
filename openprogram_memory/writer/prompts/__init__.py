"""The writer and organizer prompts, and the request text a model writer sees.

The prompts are the Markdown files beside this module (``write.md``,
``repair.md``, ``organize.md``, ``organize_repair.md``; package data). They carry the content policy
(architecture §5, design §05) and the exact record format (architecture §2.1, design §10).
Nothing here depends on a provider, so every model backend builds its
system prompt and first user message the same way.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from importlib import resources
from typing import TYPE_CHECKING

from ...failures import FailureCode, MemoryFailure

if TYPE_CHECKING:
    from ..backend import WriterRequest
    from ..superseded import SupersededRecord

# stage → prompt files, concatenated in order
STAGE_PROMPTS: dict[str, tuple[str, ...]] = {
    "write": ("write.md",),
    "backfill": ("write.md",),
    "write-repair": ("write.md", "repair.md"),
    "organize": ("organize.md",),
    "organize-repair": ("organize.md", "organize_repair.md"),
}


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """The text of one prompt file."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def system_prompt(stage: str) -> str:
    """The system prompt for a writer stage; INVALID_ARGUMENT for an unknown stage."""
    names = STAGE_PROMPTS.get(stage)
    if names is None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"unknown writer stage {stage!r}; expected one of {', '.join(STAGE_PROMPTS)}")
    return "\n\n".join(load_prompt(name).strip() for name in names) + "\n"


def user_message(request: "WriterRequest") -> str:
    """The first user message: rejection (repair), batch turns verbatim, topic tree."""
    parts: list[str] = [f"Stage: {request.stage}"]
    if request.session_id:
        parts.append(f"Session: {request.session_id}")
    if request.stage.endswith("-repair"):
        parts.append(
            "## Your previous edit was rejected\n\n"
            "The staging copy is back to the state before that edit. The runtime said:\n\n"
            f"<rejection>\n{request.rejection or '(no reason given)'}\n</rejection>"
        )
    if request.parent_context:
        parts.append(
            "## Parent context (this session is a sub-agent; context only, never a source to cite)\n\n"
            f"<parent>\n{request.parent_context}\n</parent>"
        )
    if request.turns:
        count = len(request.turns)
        lines = [f"## Batch ({count} turn{'' if count == 1 else 's'}, verbatim; cite the `source` ids)"]
        for turn in request.turns:
            lines.append(
                f'<turn source="{escape(turn.source_id)}" role="{escape(turn.role)}" '
                f'speaker="{escape(turn.speaker)}" time="{escape(turn.timestamp)}">\n{turn.text}\n</turn>'
            )
        parts.append("\n\n".join(lines))
    elif not request.stage.startswith("organize"):
        parts.append("## Batch\n\n(no turns)")
    if request.superseded:
        parts.append(superseded_section(request))
    if request.restored:
        parts.append(restored_section(request))
    tree = "\n".join(f"- {path}" for path in request.topic_paths) or "(no topic files yet)"
    parts.append(f"## Current topic files\n\n{tree}\n\nRead files with the tools before you change them.")
    parts.append("When you are done, call commit_edits.")
    return "\n\n".join(parts) + "\n"


def superseded_section(request: "WriterRequest") -> str:
    """The records that came from a branch the person abandoned, and what to do with each."""
    lines = [
        "## Records from an abandoned branch",
        "The person rewound the conversation and abandoned the branch these records came from; the batch "
        "above is the branch they chose instead. Decide for each record, using the batch as evidence: "
        "leave it as it is if it is still true; rewrite it with `update_record` (cite the batch turn that "
        "says so) if the new branch changes it; remove it with `delete_record` if the new branch says "
        "otherwise or it only made sense on the abandoned branch.",
    ]
    return "\n\n".join(lines + _record_lines(request.superseded))


def restored_section(request: "WriterRequest") -> str:
    """The records kept as from an abandoned branch that the person has gone back to."""
    lines = [
        "## Records from a branch the person went back to",
        "These records were kept as from an abandoned branch (their footnote time ends in "
        "` (abandoned branch)`); the person has since gone back to that branch, so they are current again. "
        "Unless the batch above says otherwise, remove ` (abandoned branch)` from each one's footnote time "
        "and leave its text and sources as they are.",
    ]
    return "\n\n".join(lines + _record_lines(request.restored))


def _record_lines(records: "list[SupersededRecord]") -> list[str]:
    return [f'<record memory_id="{escape(record.memory_id)}" topic="{escape(record.topic)}">\n'
            f"{record.content}\n</record>" for record in records]
