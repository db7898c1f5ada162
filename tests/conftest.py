"""Every test runs against its own state directory, with no memory env vars."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("OPENPROGRAM_MEMORY_") or name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
    state = tmp_path / "state"
    monkeypatch.setenv("OPENPROGRAM_STATE", str(state))
    monkeypatch.setenv("EDITOR", "false")
    return state


@pytest.fixture(scope="session", autouse=True)
def _private_tmpdir(tmp_path_factory: pytest.TempPathFactory):
    """The suite's temp files go to one private $TMPDIR, which must hold no staging dir afterwards.

    A staging or scratch directory left behind means some path skipped its
    cleanup (or its reclaim on the next open). Kept drafts of a rejected
    ``memory edit`` (marked ``.keep``) are meant to stay.
    """
    import tempfile

    private = tmp_path_factory.mktemp("tmpdir")
    saved_env, saved_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(private)
    tempfile.tempdir = str(private)
    yield private
    tempfile.tempdir = saved_dir
    if saved_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved_env
    left = sorted(p.name for p in private.iterdir()
                  if p.name.startswith("openprogram-memory-") and not (p / ".keep").exists())
    assert not left, f"the test suite left staging/scratch directories in $TMPDIR: {left[:10]}"


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch):
    """``count_calls(owner, name)`` wraps ``owner.name`` for this test and returns the list it appends one item
    to per call (how many stat passes, refreshes, … an operation made)."""

    def install(owner: object, name: str) -> list[int]:
        calls: list[int] = []
        real = getattr(owner, name)

        def counting(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)
        return calls

    return install
