"""``openprogram memory hook claude-code``: one command for every Claude Code hook event.

Claude Code runs the command with the event as JSON on stdin (common fields
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; per event
``source`` (SessionStart), ``prompt`` (UserPromptSubmit), ``trigger``
(PreCompact), ``reason`` (SessionEnd), ``agent_transcript_path``
(SubagentStop)). What it does per event (architecture §10 mapped onto the hooks):

- ``SessionStart`` → the core block, fenced once in ``<memory-context>``, as
  ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``. It
  reads the derived ``core.md`` directly — the transaction rewrites it with
  every change and never installs an invalid one — so the session starts
  without loading the topic tree.
- ``UserPromptSubmit`` → the recall block for ``prompt`` (trusted records
  only) in the same shape, from the cached search index. Nothing matches →
  nothing is printed: an empty ``additionalContext`` would add an empty
  hook note to the conversation, and no output is the documented no-op.
- ``Stop``/``SubagentStop`` → the transcript's new lines are imported and
  the per-turn write runs (it writes only past the threshold);
  ``PreCompact``/``SessionEnd`` → the same with the forced write. Both are
  handed to a detached process (:mod:`.hook_worker`) so the agent never
  waits for a model.

Any other event (``PreToolUse``, ``Notification``, events Claude Code
adds later) is none of memory's business: ignored, nothing recorded.

It always exits 0 and prints nothing on any failure — bad JSON, no
workspace, memory disabled, lock busy, model down: memory never takes the
conversation down. A failure where a workspace exists is recorded once, as
a hook problem (a ``memory.hook_failed`` event and ``last_hook_problem`` in
``writer-status.json``, which ``memory status`` shows with the log's path),
never as a writer failure: nothing was written. A ``session_id`` that is
not a safe id (``../../etc`` would name a directory outside the session
store) is such a failure (``INVALID_ARGUMENT``): no background write starts.
A missing workspace is never created (a note goes to stderr, which Claude
Code shows only in debug mode).

This module is on the hot path of every prompt: it imports only what each
event needs, and never the CLI libraries.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

READ_EVENTS = ("SessionStart", "UserPromptSubmit")
WRITE_EVENTS = {"Stop": False, "SubagentStop": False, "PreCompact": True, "SessionEnd": True}  # event → force
EVENTS = (*READ_EVENTS, *WRITE_EVENTS)
WORKER_LOG = "hook.log"


class HookError(Exception):
    """A failure to record: ``code`` is a FailureCode value."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def main(argv: list[str] | None = None, stdin: Any = None, stdout: Any = None) -> int:
    """Run one hook event; always returns 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    state = _state_flag(args)
    raw = (stdin or sys.stdin.buffer).read()
    output = handle(raw if isinstance(raw, bytes) else raw.encode("utf-8"), state)
    if output:
        out = stdout or sys.stdout
        out.write(output + "\n")
        out.flush()
    return 0


def _state_flag(args: list[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--state" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--state="):
            return arg.split("=", 1)[1]
    return None


def handle(raw: bytes, state: str | None) -> str:
    """The stdout for one event (``""`` for none); never raises."""
    try:
        from ..config import load_settings

        settings = load_settings(state)
    except Exception:  # even a broken config must not break the agent
        return ""
    if not settings.enabled:
        return ""
    memory_dir = settings.memory_dir
    if not ((memory_dir / ".git").is_dir() and (memory_dir / ".scriptorium").is_dir()):
        print(f"openprogram memory: no workspace at {memory_dir}; run `openprogram memory init` (hook did nothing)",
              file=sys.stderr)
        return ""
    event: dict[str, Any] = {}
    try:
        event = _parse(raw)
        name = event["hook_event_name"]
        if name not in EVENTS:
            return ""  # an event memory does not handle: the hook may be installed for more than ours
        if name == "SessionStart":
            return _context(name, _core(settings))
        if name == "UserPromptSubmit":
            return _context(name, _recall(settings, event.get("prompt")))
        _start_write(settings, event, force=WRITE_EVENTS[name])
        return ""
    except Exception as exc:
        _record(memory_dir, event, exc)
        return ""


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        event = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise HookError("INVALID_ARGUMENT", f"hook input is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise HookError("INVALID_ARGUMENT", "hook input is not a JSON object")
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookError("INVALID_ARGUMENT", f"hook input without a hook_event_name (got {name!r}); "
                                            f"memory handles: {', '.join(EVENTS)}")
    return event


def _context(name: str, text: str) -> str:
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})


def _core(settings: Any) -> str:
    from ..search.fence import core_block
    from ..workspace.layout import CORE_RENDER

    if not settings["memory.core.inject"]:
        return ""
    try:
        text = (settings.memory_dir / CORE_RENDER).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""  # a fresh workspace has no core yet
    return core_block(text)


def _recall(settings: Any, prompt: Any) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    from ..search.query import recall_block, search

    return recall_block(search(settings.memory_dir, prompt, int(settings["memory.retrieval.top_k"])))


def _start_write(settings: Any, event: dict[str, Any], *, force: bool) -> None:
    """Hand import + write to a detached process: the agent must not wait for a model."""
    import subprocess

    session = event.get("session_id")
    transcripts = [event[key] for key in ("transcript_path", "agent_transcript_path")
                   if isinstance(event.get(key), str) and event[key]]
    # the transcript's own sessionId decides what is written (see .hook_worker): the payload's id is only needed
    # when there is no transcript to import
    has_session = isinstance(session, str) and bool(session.strip())
    if not has_session and not transcripts:
        raise HookError("MISSING_SESSION_ID",
                        f"{event['hook_event_name']} event with neither a session_id nor a transcript_path")
    if has_session:
        from ..sessions.nodes import validate_id

        validate_id(session, "session_id")  # it names a directory of the store: '../../etc' is refused here
    command = [sys.executable, "-m", "openprogram_memory.agents.hook_worker", "--state", str(settings.state_dir),
               "--event", event["hook_event_name"]]
    if has_session:
        command += ["--session", session]
    for transcript in transcripts:
        command += ["--transcript", transcript]
    if force:
        command.append("--force")
    log_path = settings.memory_dir / ".scriptorium" / WORKER_LOG
    with open(log_path, "ab") as log:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                         start_new_session=True, cwd=str(settings.memory_dir))


def _record(memory_dir: Path, event: dict[str, Any], exc: BaseException) -> None:
    """Record a swallowed failure as a hook problem (nothing was written); never raises."""
    try:
        from datetime import datetime, timezone

        from ..failures import FailureCode, MemoryFailure, as_failure
        from ..workspace.layout import Layout
        from ..writer import journal

        if isinstance(exc, HookError):
            failure = MemoryFailure(FailureCode(exc.code), exc.message)
        else:
            failure = as_failure(exc)
        layout = Layout(memory_dir)
        session = event.get("session_id") if isinstance(event.get("session_id"), str) else None
        name = event.get("hook_event_name")
        log_path = layout.state(WORKER_LOG)
        stamp = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S}"
        with open(log_path, "a", encoding="utf-8") as log:  # beside the workers' lines, where status points
            log.write(f"{stamp} [{session or '-'} hook {name or '-'}] WARNING {failure}\n")
        journal.record_hook_problem(layout, failure, hook="claude-code", hook_event=name, session=session,
                                    log_path=str(log_path))
    except Exception as inner:  # recording is best effort; the agent must still go on
        print(f"openprogram memory hook: could not record a failure ({exc}): {inner}", file=sys.stderr)
