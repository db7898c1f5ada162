"""Topic paths records are placed in, and slugs for new ones."""

from __future__ import annotations

import re

PROJECTS_DIR = "topics/projects"
GENERAL_PROJECT = ("topics/projects/general.md", "Projects")
NOTES = ("topics/notes.md", "Notes")


def slugify(text: str, fallback: str = "topic") -> str:
    """``Orbit CLI`` → ``orbit-cli``: a file-name-safe slug."""
    slug = re.sub(r"[^0-9a-z]+", "-", text.casefold()).strip("-")
    return slug or fallback
