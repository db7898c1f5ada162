"""SIGKILL at every step of an install leaves the old or the new tree."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.helpers import make_workspace, record, tree_digest
from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

CHILD = r"""
import json, os, signal, sys
from openprogram_memory.config import load_settings
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.memory import MemoryWorkspace
state, kill_at, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ws = MemoryWorkspace.open(load_settings(state))
steps = []
def hook(step):
    steps.append(step)
    if len(steps) - 1 == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
text = open(os.path.join(state, "new-topic.txt")).read()
def edit(staging):
    staging.write("topics/people/dana.md", text)
    staging.delete("topics/projects/billing.md")
    staging.write("topics/fresh.md", text.replace("families", "schools"))
ws.edit(edit, policy=Policy.MODEL, step=hook)
open(out, "w").write(json.dumps(steps))
"""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def _digest(root: Path) -> dict[str, str]:
    return {k: v for k, v in tree_digest(root).items() if not k.startswith((".git/", ".scriptorium/"))}


@pytest.mark.skipif(shutil.which("git") is None, reason="git CLI needed to check fsck/status")
def test_sigkill_at_every_install_step(tmp_path):
    base_state = tmp_path / "base"
    ws = make_workspace(base_state)
    ws.update(changes=[
        {"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.")},
        {"path": "topics/projects/billing.md", "content": "# Billing\n\n" + record("Billing uses FastAPI.", "openprogram/s1/u3")},
    ])
    new_text = "# Dana\n\n" + record("Dana moved to Utrecht in 2025 and now sells cargo bikes to families.", "openprogram/s1/u1", "e2")
    (base_state / "new-topic.txt").write_text(new_text)
    old = _digest(ws.root)

    # A clean run tells the steps and the new tree.
    clean = tmp_path / "clean"
    shutil.copytree(base_state, clean, symlinks=True)
    steps_file = tmp_path / "steps.json"
    subprocess.run([sys.executable, "-c", CHILD, str(clean), "-1", str(steps_file)], check=True)
    steps = json.loads(steps_file.read_text())
    assert steps[0] == "staged" and steps[-1] == "done" and len(steps) > 6
    new = _digest(clean / "memory")
    assert new != old

    for index, step in enumerate(steps):
        state = tmp_path / f"kill-{index}"
        shutil.copytree(base_state, state, symlinks=True)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(state), str(index), str(tmp_path / "x")])
        assert proc.returncode == -signal.SIGKILL, step
        reopened = MemoryWorkspace.open(load_settings(state))
        after = _digest(reopened.root)
        assert after in (old, new), f"mixed tree after a kill at {step}"
        if index >= steps.index("done"):
            assert after == new, step
        fsck = _git(reopened.root, "fsck", "--strict")
        assert fsck.returncode == 0, fsck.stderr
        assert _git(reopened.root, "status", "--porcelain").stdout == "", step
        assert not reopened.layout.install_dir.exists()
