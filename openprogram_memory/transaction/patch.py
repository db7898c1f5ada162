"""Apply a unified diff to the staging copy (the ``patch`` form of §8).

Supported: modify, create (``--- /dev/null``) and delete (``+++ /dev/null``)
of text files. Renames, mode changes, symlinks and binary patches are
INVALID_ARGUMENT; a context mismatch or overlapping hunks PATCH_CONFLICT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..failures import FailureCode, MemoryFailure

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_UNSUPPORTED = ("rename from", "rename to", "old mode", "new mode", "new file mode 120000",
                "deleted file mode 120000", "similarity index", "copy from", "copy to", "GIT binary patch",
                "Binary files")


@dataclass
class Hunk:
    old_start: int
    old_len: int
    lines: list[str] = field(default_factory=list)  # with their ' ', '-', '+' prefixes


@dataclass
class FilePatch:
    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file this patch changes (a header never names /dev/null twice)."""
        path = self.new_path or self.old_path
        assert path is not None
        return path


def _strip_prefix(path: str) -> str | None:
    path = path.split("\t")[0].strip()
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified diff; unsupported features raise INVALID_ARGUMENT."""
    if not isinstance(text, str) or not text.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "patch is empty")
    lines = text.splitlines()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if any(line.startswith(marker) for marker in _UNSUPPORTED):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"unsupported patch feature ({line.split(' ')[0]} …): renames, mode changes, "
                                "symlinks and binary patches are not accepted; use whole-file changes")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            patches.append(_file_header(line[4:], lines[i + 1][4:]))
            i += 2
            continue
        match = _HUNK_RE.match(line)
        if match:
            if not patches:
                raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "hunk before any file header")
            hunk, i = _read_hunk(lines, i, match)
            patches[-1].hunks.append(hunk)
            continue
        i += 1
    if not patches:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "no file headers (--- / +++) in patch")
    return patches


def _file_header(old: str, new: str) -> FilePatch:
    """The ``---``/``+++`` pair: a create, a delete or a modify of one path."""
    current = FilePatch(_strip_prefix(old), _strip_prefix(new))
    if current.old_path is None and current.new_path is None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "patch header names /dev/null on both sides")
    if current.old_path and current.new_path and current.old_path != current.new_path:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"patch renames {current.old_path} to {current.new_path}; renames are not accepted")
    return current


def _read_hunk(lines: list[str], i: int, match: re.Match[str]) -> tuple[Hunk, int]:
    """The hunk whose header is ``lines[i]``, and the index of the line after it."""
    header = lines[i]
    old_len = int(match.group(2)) if match.group(2) is not None else 1
    new_len = int(match.group(4)) if match.group(4) is not None else 1
    hunk = Hunk(int(match.group(1)), old_len)
    i += 1
    seen_old = seen_new = 0
    while i < len(lines) and (seen_old < old_len or seen_new < new_len):
        body = lines[i]
        i += 1
        if body.startswith("\\"):
            continue
        tag = body[:1] or " "
        if tag not in " -+":
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"malformed hunk line: {body!r}")
        hunk.lines.append(tag + body[1:])
        seen_old += tag in " -"
        seen_new += tag in " +"
    if (seen_old, seen_new) != (old_len, new_len):
        # A header that promises more lines than follow would make the
        # hunk swallow whatever comes next (or nothing): refuse it.
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"hunk header {header.split('@@')[1].strip()!r} promises {old_len} old and "
                            f"{new_len} new lines, the hunk has {seen_old} and {seen_new}")
    return hunk, i


def apply_file_patch(original: str | None, patch: FilePatch) -> str | None:
    """Apply one file's hunks; None means the file is deleted."""
    if patch.new_path is None:
        return None
    source = (original or "").split("\n")
    trailing_newline = original is None or original.endswith("\n")
    if original and original.endswith("\n"):
        source = source[:-1]
    if original is None or original == "":
        source = []
    out: list[str] = []
    cursor = 0
    for hunk in sorted(patch.hunks, key=lambda h: h.old_start):
        start = max(hunk.old_start - 1, 0) if hunk.old_len else hunk.old_start
        if start < cursor:
            raise MemoryFailure(FailureCode.PATCH_CONFLICT, f"{patch.new_path}: overlapping hunks at line {hunk.old_start}")
        expected = [line[1:] for line in hunk.lines if line[0] in " -"]
        if source[start:start + len(expected)] != expected:
            raise MemoryFailure(FailureCode.PATCH_CONFLICT,
                                f"{patch.new_path}: hunk at line {hunk.old_start} does not match the current text",
                                details={"file": patch.new_path, "line": hunk.old_start})
        out.extend(source[cursor:start])
        out.extend(line[1:] for line in hunk.lines if line[0] in " +")
        cursor = start + len(expected)
    out.extend(source[cursor:])
    text = "\n".join(out)
    return text + ("\n" if trailing_newline and text else "")
