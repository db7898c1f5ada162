"""Each refusal of the unified-diff parser, by the message a caller sees (INVALID_ARGUMENT / PATCH_CONFLICT)."""

from __future__ import annotations

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.transaction.patch import FilePatch, Hunk, apply_file_patch, parse_patch

HEADER = "--- a/topics/a.md\n+++ b/topics/a.md\n"


@pytest.mark.parametrize("patch, says", [
    ("   \n", "patch is empty"),
    ("just some text\n", "no file headers"),
    (HEADER + "old mode 100644\nnew mode 100755\n", "unsupported patch feature"),
    ("--- a/topics/a.md\n+++ b/topics/b.md\n@@ -1 +1 @@\n-a\n+b\n", "renames topics/a.md to topics/b.md"),
    ("@@ -1 +1 @@\n-a\n+b\n" + HEADER, "hunk before any file header"),
    (HEADER + "@@ -1,2 +1,2 @@\n-a\n*b\n+a\n+b\n", "malformed hunk line"),
])
def test_parse_refusals(patch, says):
    with pytest.raises(MemoryFailure) as info:
        parse_patch(patch)
    assert info.value.code is FailureCode.INVALID_ARGUMENT and says in info.value.message


def test_apply_refuses_overlapping_and_mismatched_hunks():
    patch = FilePatch("topics/a.md", "topics/a.md", [Hunk(1, 2, ["-a", "-b", "+x"]), Hunk(2, 1, ["-b", "+y"])])
    with pytest.raises(MemoryFailure) as info:
        apply_file_patch("a\nb\nc\n", patch)
    assert info.value.code is FailureCode.PATCH_CONFLICT and "overlapping" in info.value.message
    stale = FilePatch("topics/a.md", "topics/a.md", [Hunk(1, 1, ["-zzz", "+x"])])
    with pytest.raises(MemoryFailure) as info:
        apply_file_patch("a\nb\n", stale)
    assert info.value.code is FailureCode.PATCH_CONFLICT and "does not match" in info.value.message
