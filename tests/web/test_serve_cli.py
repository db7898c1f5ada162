"""``openprogram memory serve``: prints where it listens; refuses when memory is off."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from openprogram_memory.cli.app import app


def test_serve_refuses_when_disabled_and_creates_nothing(state_dir: Path, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    result = CliRunner().invoke(app, ["memory", "serve", "--port", "0", "--json"])
    assert result.exit_code == 69
    assert json.loads(result.stdout)["code"] == "MEMORY_DISABLED"
    assert not (state_dir / "memory").exists()


def test_serve_prints_its_url_and_serves(state_dir: Path):
    from openprogram_memory.config import load_settings
    from openprogram_memory.memory import MemoryWorkspace

    MemoryWorkspace.open(load_settings(state_dir), create=True)  # `memory init`
    command = [sys.executable, "-c", "from openprogram_memory.cli.app import main; main()",
               "memory", "serve", "--port", "0", "--json", "--no-open", "--state", str(state_dir)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        ready = json.loads(line)
        assert ready["url"] == f"http://127.0.0.1:{ready['port']}/"
        assert ready["token_file"] == str(state_dir / "memory" / ".scriptorium" / "owner-token")
        assert ready["login_url"].startswith(ready["url"] + "?code=")
        token = Path(ready["token_file"]).read_text().strip()
        request = urllib.request.Request(ready["url"] + "api/memory/status",
                                         headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.load(response)["topics"] == 0  # the workspace was created on first serve
        assert Path(ready["token_file"]).stat().st_mode & 0o777 == 0o600
    finally:
        process.terminate()
        process.wait(timeout=30)
