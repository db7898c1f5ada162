"""Resources: the injected core block and every topic file, listed as they are now.

``memory://core`` is what an agent receives at session start — the
effective core block fenced once in ``<memory-context>`` exactly as the
provider's ``system_prompt()`` gives it (empty when injection is off).
``memory://topics/<path>`` is one topic file's Markdown, read-only here:
changes go through ``memory_update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from ..failures import FailureCode, MemoryFailure
from ..workspace.layout import CORE_TOPIC, TOPICS, check_topic_path
from .access import WorkspaceAccess

SCHEME = "memory://"
CORE_URI = SCHEME + "core"
MARKDOWN = "text/markdown"


@dataclass(frozen=True)
class ResourceInfo:
    """One listed resource."""

    uri: str
    name: str
    description: str
    mime_type: str = MARKDOWN


def topic_uri(rel: str) -> str:
    """``topics/people/dana.md`` → ``memory://topics/people/dana.md`` (percent-encoded)."""
    return SCHEME + quote(rel, safe="/")


def list_resources(access: WorkspaceAccess) -> list[ResourceInfo]:
    """The core block, then every topic file in path order."""
    ws = access.workspace()
    out = [ResourceInfo(CORE_URI, "core block",
                        "The long-term memory block injected at session start (fenced in <memory-context>).")]
    for rel, summary in sorted(ws.tree().files.items()):
        what = "canonical core records" if rel == CORE_TOPIC else "topic"
        out.append(ResourceInfo(topic_uri(rel), rel, f"Memory {what}: {len(summary.records)} record(s)."))
    return out


def read_resource(access: WorkspaceAccess, uri: str) -> str:
    """The text behind ``uri``; MEMORY_NOT_FOUND for an unknown URI, path codes for a bad one."""
    if uri == CORE_URI:
        return core_block(access)
    if not uri.startswith(SCHEME + TOPICS + "/"):
        raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                            f"no resource {uri!r}; resources are {CORE_URI} and {SCHEME}{TOPICS}/<path>.md")
    rel = check_topic_path(unquote(uri[len(SCHEME):]))
    return access.workspace().read_topic(rel)


def core_block(access: WorkspaceAccess) -> str:
    """The effective core block, fenced once, as ``FilesMemory.system_prompt()`` builds it."""
    from ..provider import CORE_NOTE
    from ..search.fence import fence

    view = access.workspace().core_view()
    return fence(view["effective"], CORE_NOTE) if view["inject"] else ""
