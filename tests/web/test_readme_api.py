"""The README's "Local HTTP API" example runs as written against ``memory serve``, and says what it does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    return README.read_text(encoding="utf-8").split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _json_values(text: str) -> list:
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README example uses curl")
def test_the_readme_curl_example_works_against_memory_serve(state_dir: Path) -> None:
    section = _section("Local HTTP API")
    script = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    serve, curls = script.split("\n", 1)
    assert serve.startswith("openprogram memory serve ")  # the server runs elsewhere: started here instead
    MemoryWorkspace.open(load_settings(state_dir), create=True)  # `memory init`
    command = [sys.executable, "-c", "from openprogram_memory.cli.app import main; main()",
               "memory", "serve", "--port", "0", "--json", "--no-open", "--state", str(state_dir)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = json.loads(server.stdout.readline())["port"]
        assert "127.0.0.1:8765/" in curls
        done = subprocess.run(["bash", "-euc", curls.replace("127.0.0.1:8765/", f"127.0.0.1:{port}/")],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "OPENPROGRAM_STATE": str(state_dir)})
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    status, change, search = _json_values(done.stdout)
    assert status["records"] == 0 and "revision" in status
    assert change["ok"] is True and change["changed_files"] == ["topics/people/dave.md"]
    [hit] = search["results"]
    assert (hit["memory_id"], hit["content"], hit["trust_state"]) == (change["block_ids"][0],
                                                                     "Dave runs a bike shop.", "trusted")


def test_the_readme_says_which_name_search_takes_where(state_dir: Path) -> None:
    """HTTP takes ?q=, the MCP tool takes query; each refuses the other's name as INVALID_ARGUMENT."""
    from openprogram_memory.failures import MemoryFailure
    from openprogram_memory.mcp_server.access import WorkspaceAccess
    from openprogram_memory.mcp_server.tools import call_tool
    from openprogram_memory.web.routes import MemoryApi

    section = _section("Local HTTP API")
    assert "`?q=`" in section and "`query` in the MCP tool" in section
    ws = MemoryWorkspace.open(load_settings(state_dir), create=True)
    api = MemoryApi(load_settings(state_dir))
    handler, _ = api.route("GET", "/api/memory/search")
    assert handler(ws, {"q": "bike"}).body == {"results": []}
    with pytest.raises(MemoryFailure, match="search needs a query") as http_refused:
        handler(ws, {"query": "bike"})
    with pytest.raises(MemoryFailure, match="unknown argument") as mcp_refused:
        call_tool(WorkspaceAccess(load_settings(state_dir)), "memory_search", {"q": "bike"})
    assert http_refused.value.code.value == mcp_refused.value.code.value == "INVALID_ARGUMENT"
