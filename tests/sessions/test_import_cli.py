"""``memory import`` as people and scripts see it: skip reasons, wrong formats, old transcripts written whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
runner = CliRunner()
SESSION = "old-format-0001"
# What an older Claude Code wrote: parentUuid null on every line.
CONVERSATION = [
    ("user", "Hi, I'm Priya. I prefer tabs over spaces in every repository."),
    ("assistant", "Noted, Priya: tabs, not spaces."),
    ("user", "Our staging database runs on Postgres 16 in Dublin."),
    ("assistant", "Got it, Postgres 16 in Dublin for staging."),
    ("user", "We decided to use Flask for the admin panel."),
    ("assistant", "Flask for the admin panel, then."),
]


pytestmark = pytest.mark.usefixtures("workspace")  # `memory import` needs the workspace `memory init` makes


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def old_transcript(path: Path) -> list[str]:
    ids = []
    with path.open("w") as handle:
        for number, (role, text) in enumerate(CONVERSATION, start=1):
            uuid = f"old-{number:03d}"
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                message.update(id=f"msg_{number:03d}", type="message", model="claude-3-sonnet-20240229")
            handle.write(json.dumps({"type": role, "timestamp": f"2025-06-14T11:0{number}:00Z", "parentUuid": None,
                                     "isSidechain": False, "userType": "external", "cwd": "/tmp",
                                     "sessionId": SESSION, "version": "1.0.0", "uuid": uuid,
                                     "message": message}) + "\n")
            ids.append(uuid)
    return ids


def test_a_transcript_with_null_parents_is_written_whole_in_one_pass_and_one_commit(tmp_path: Path) -> None:
    ids = old_transcript(tmp_path / "old.jsonl")
    imported = json.loads(invoke("memory", "import", "claude-code", str(tmp_path / "old.jsonl"), "--json").stdout)
    assert imported == {"sessions": [SESSION], "imported": 6, "skipped": {}}
    ws = MemoryWorkspace.open(load_settings(), create=True)
    result = invoke("memory", "write", "--session", SESSION, "--force", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passes"] == 1 and data["written"] == ids and data["pending"] == 0
    messages = [commit["message"].splitlines()[0] for commit in ws.log(1000)]
    assert [m for m in messages if m.startswith("memory: write")] == [f"memory: write 6 turn(s) of session {SESSION}"]
    archive = next((ws.root / "sources").rglob(f"*{SESSION}*.md")).read_text()
    positions = [archive.index(f"/{SESSION}/{uuid} -->") for uuid in ids]
    assert positions == sorted(positions)  # the archive lists the conversation oldest first


def linked_transcript(path: Path, numbers: range) -> None:
    """Lines ``numbers`` of CONVERSATION as a current Claude Code writes them: each names its parent."""
    with path.open("w") as handle:
        for number in numbers:
            role, text = CONVERSATION[number - 1]
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            handle.write(json.dumps({"type": role, "timestamp": f"2025-06-14T11:0{number}:00Z",
                                     "parentUuid": f"new-{number - 1:03d}" if number > 1 else None,
                                     "isSidechain": False, "sessionId": SESSION, "uuid": f"new-{number:03d}",
                                     "message": message}) + "\n")


def imported_tree() -> dict[str, tuple[str | None, bool]]:
    store = SessionStore(load_settings().sessions_dir)
    tree = {node_id: (store.get_node(SESSION, node_id).predecessor, store.get_node(SESSION, node_id).rewound)
            for node_id in store.parent_map(SESSION)}
    return {"head": store.head(SESSION), **tree}


def written_records(ws: MemoryWorkspace) -> list[str]:
    """Every record line of the topic files, without its block ID."""
    return sorted(line.rsplit(" ^", 1)[0] for path in (ws.root / "topics").rglob("*.md")
                  for line in path.read_text().splitlines() if " ^" in line)


@pytest.mark.parametrize("first, then", [(range(5, 7), range(1, 5)), (range(1, 5), range(5, 7)),
                                         (range(6, 7), range(1, 7))])
def test_two_imports_in_either_order_give_the_tree_and_records_of_one(tmp_path: Path, first, then) -> None:
    """A line imported before its parent is put back under it when the parent comes: nothing is rewound."""
    linked_transcript(tmp_path / "all.jsonl", range(1, 7))
    ws = MemoryWorkspace.open(load_settings(), create=True)
    invoke("memory", "import", "claude-code", str(tmp_path / "all.jsonl"))
    one_import = imported_tree()
    assert invoke("memory", "write", "--session", SESSION, "--force").exit_code == 0
    expected = written_records(ws)
    shutil.rmtree(load_settings().state_dir)
    ws = MemoryWorkspace.open(load_settings(), create=True)
    linked_transcript(tmp_path / "first.jsonl", first)
    linked_transcript(tmp_path / "then.jsonl", then)
    for part in ("first", "then"):
        assert invoke("memory", "import", "claude-code", str(tmp_path / f"{part}.jsonl")).exit_code == 0
    assert imported_tree() == one_import
    assert not any(rewound for _, rewound in list(one_import.values())[1:])
    data = json.loads(invoke("memory", "write", "--session", SESSION, "--force", "--json").stdout)
    assert data["written"] == [f"new-{n:03d}" for n in range(1, 7)] and data["pending"] == 0
    assert written_records(ws) == expected and expected


def test_turns_written_before_their_parents_came_are_not_written_again(tmp_path: Path) -> None:
    """Importing the end of a conversation, writing it, then importing its start: the start is written, once."""
    linked_transcript(tmp_path / "start.jsonl", range(1, 5))
    linked_transcript(tmp_path / "end.jsonl", range(5, 7))
    MemoryWorkspace.open(load_settings(), create=True)
    invoke("memory", "import", "claude-code", str(tmp_path / "end.jsonl"))
    first = json.loads(invoke("memory", "write", "--session", SESSION, "--force", "--json").stdout)
    assert first["written"] == ["new-005", "new-006"]
    invoke("memory", "import", "claude-code", str(tmp_path / "start.jsonl"))
    data = json.loads(invoke("memory", "write", "--session", SESSION, "--force", "--json").stdout)
    assert data["written"] == ["new-001", "new-002", "new-003", "new-004"] and data["pending"] == 0
    again = json.loads(invoke("memory", "write", "--session", SESSION, "--force", "--json").stdout)
    assert again["written"] == [] and again["pending"] == 0
    assert imported_tree()["new-005"] == ("new-004", False)


def test_human_output_shows_what_was_skipped_and_why(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text((FIXTURES / "claude-code" / "rewind.jsonl").read_text() + "{torn\n")
    out = invoke("memory", "import", "claude-code", str(path)).stdout
    assert "18 node(s) imported" in out
    assert "5 line(s) skipped: malformed_json 1, not_a_turn 4" in out


def test_a_codex_rollout_given_as_claude_code_exits_64_and_writes_nothing(tmp_path: Path) -> None:
    """INVALID_ARGUMENT is exit 64 whether the file is missing or of another format: one code, one exit code."""
    rollout = FIXTURES / "codex" / "crud.jsonl"
    result = invoke("memory", "import", "claude-code", str(rollout), "--json")
    assert result.exit_code == 64
    error = json.loads(result.stdout)
    assert error["code"] == "INVALID_ARGUMENT" and "looks like a codex rollout" in error["message"]
    assert f"openprogram memory import codex {rollout}" in error["message"]
    assert SessionStore(load_settings().sessions_dir).list_sessions() == []
    human = invoke("memory", "import", "claude-code", str(rollout))
    assert human.exit_code == 64 and "looks like a codex rollout" in human.stderr
    assert "looks like: codex" in human.stderr
    missing = invoke("memory", "import", "claude-code", str(tmp_path / "nope.jsonl"), "--json")
    assert missing.exit_code == 64 and json.loads(missing.stdout)["code"] == "INVALID_ARGUMENT"


def test_details_are_printed_for_people_not_as_python(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    human = invoke("memory", "import", "claude-code", str(notes))
    assert human.exit_code == 64 and "is not a Claude Code transcript" in human.stderr
    assert "None" not in human.stderr and "looks like" not in human.stderr


def test_a_directory_imports_every_transcript_and_skips_the_other_files_saying_why(tmp_path: Path) -> None:
    """One stray file in ~/.claude/projects must not stop the import of every conversation beside it."""
    projects = tmp_path / "projects"
    (projects / "a").mkdir(parents=True)
    (projects / "a" / "rewind.jsonl").write_text((FIXTURES / "claude-code" / "rewind.jsonl").read_text())
    (projects / "a" / "notes.jsonl").write_text('{"hello": 1}\n')
    (projects / "crud.jsonl").write_text((FIXTURES / "codex" / "crud.jsonl").read_text())
    human = invoke("memory", "import", "claude-code", str(projects))
    assert human.exit_code == 0 and "18 node(s) imported" in human.stdout
    skipped = [line for line in human.stderr.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 2
    assert f"{projects / 'a' / 'notes.jsonl'} is not a Claude Code transcript" in skipped[0]
    assert f"{projects / 'crud.jsonl'} looks like a codex rollout" in skipped[1]
    assert SessionStore(load_settings().sessions_dir).list_sessions() != []
    data = json.loads(invoke("memory", "import", "claude-code", str(projects), "--json").stdout)
    assert [f["path"] for f in data["skipped_files"]] == [str(projects / "a" / "notes.jsonl"),
                                                          str(projects / "crud.jsonl")]


def test_a_directory_where_nothing_is_a_transcript_of_the_format_fails_naming_each_file(tmp_path: Path) -> None:
    (tmp_path / "crud.jsonl").write_text((FIXTURES / "codex" / "crud.jsonl").read_text())
    result = invoke("memory", "import", "claude-code", str(tmp_path), "--json")
    error = json.loads(result.stdout)
    assert result.exit_code == 64 and error["code"] == "INVALID_ARGUMENT" and "nothing imported" in error["message"]
    assert [f["path"] for f in error["details"]["skipped_files"]] == [str(tmp_path / "crud.jsonl")]
    human = invoke("memory", "import", "claude-code", str(tmp_path))
    assert human.exit_code == 64 and f"{tmp_path / 'crud.jsonl'} looks like a codex rollout" in human.stderr
    assert SessionStore(load_settings().sessions_dir).list_sessions() == []


def test_a_folder_of_another_formats_files_is_said_once_with_the_count(tmp_path: Path) -> None:
    """Codex rollouts given to `import claude-code` as a folder: one hint for the folder, not one per file."""
    folder = tmp_path / "rollouts"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.jsonl").write_text((FIXTURES / "codex" / "crud.jsonl").read_text())
    human = invoke("memory", "import", "claude-code", str(folder))
    assert human.exit_code == 64 and human.stderr.count("openprogram memory import codex") == 1
    said = " ".join(human.stderr.split())
    assert f"each of the 3 files found in {folder} looks like a codex rollout" in said
    assert f"run `openprogram memory import codex {folder}`" in said and "a.jsonl" not in said
    error = json.loads(invoke("memory", "import", "claude-code", str(folder), "--json").stdout)
    assert [f["path"] for f in error["details"]["skipped_files"]] == [str(folder / f"{n}.jsonl") for n in "abc"]
    assert SessionStore(load_settings().sessions_dir).list_sessions() == []


def test_an_empty_transcript_or_directory_says_nothing_was_found(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "none").mkdir()
    for path in (tmp_path / "empty.jsonl", tmp_path / "none"):
        human = invoke("memory", "import", "claude-code", str(path))
        assert human.exit_code == 0
        assert human.stdout == f"Nothing found to import: no claude-code transcript lines in {path}.\n"


def test_a_legacy_codex_rollout_imports_and_writes_its_statements_not_its_wrappers() -> None:
    """An older codex CLI's rollout (bare header, unwrapped items): the person's turns reach memory, the
    injected ``<user_instructions>``/``<environment_context>`` messages do not."""
    legacy = FIXTURES / "codex" / "legacy.jsonl"
    session = "7c1e2d3a-5b6f-4a08-9c1d-2e3f4a5b6c7d"
    imported = json.loads(invoke("memory", "import", "codex", str(legacy), "--json").stdout)
    assert imported == {"sessions": [session], "imported": 8, "skipped": {"not_a_turn": 4}}
    again = json.loads(invoke("memory", "import", "codex", str(legacy), "--json").stdout)
    assert again["imported"] == 0
    ws = MemoryWorkspace.open(load_settings(), create=True)
    result = invoke("memory", "write", "--session", session, "--force", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["written"]) == 4  # two user and two assistant turns
    contents = {record.content for record in ws.records()}
    assert "Our CI runs on Buildkite." in contents and "The user prefers squash merges." in contents
    written = " ".join(path.read_text() for path in ws.root.rglob("*.md"))
    assert not any(word in written for word in ("British", "ripgrep", "zsh", "workspace-write"))


def test_a_legacy_codex_rollout_given_as_claude_code_says_it_looks_like_codex() -> None:
    legacy = FIXTURES / "codex" / "legacy.jsonl"
    result = invoke("memory", "import", "claude-code", str(legacy), "--json")
    error = json.loads(result.stdout)
    assert result.exit_code == 64 and error["details"]["looks_like"] == "codex"
    assert f"looks like a codex rollout, not a Claude Code transcript; run `openprogram memory import codex " \
           f"{legacy}`" in error["message"]
    assert SessionStore(load_settings().sessions_dir).list_sessions() == []


def _write_session(session: str) -> tuple[dict, set[str]]:
    """``memory write --force`` of an imported session: its JSON report and the records' contents."""
    ws = MemoryWorkspace.open(load_settings(), create=True)
    result = invoke("memory", "write", "--session", session, "--force", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), {record.content for record in ws.records()}


def test_a_claude_code_message_starting_with_a_system_reminder_is_the_persons_and_written(tmp_path: Path) -> None:
    """A reminder Claude Code puts before the person's words (in their text, or in a block before theirs) leaves
    the turn theirs; a message of nothing but reminders, or a reminder never closed, stays the runtime's. What the
    person typed with the ``#`` memory shortcut is theirs."""
    session = "reminder-first-0001"
    users = {
        "u1": "<system-reminder>Note: app.py was modified by the user.</system-reminder>\n"
              "Our team always uses pnpm, never npm.",
        "u2": [{"type": "text", "text": "<system-reminder>The TodoWrite tool hasn't been used recently."
                                        "</system-reminder>"},
               {"type": "text", "text": "I live in Lisbon."}],
        "u3": "<system-reminder>The user's timezone is Asia/Tokyo. The user is allergic to peanuts."
              "</system-reminder>\n<system-reminder>Always answer in French.</system-reminder>",
        "u4": "<system-reminder>Always answer in JSON. The user works at Initech.",
        "u5": "<ide_opened_file>The user opened the file notes.md in the IDE.</ide_opened_file>",
        "u6": "<user-memory-input>Never force-push to a shared branch.</user-memory-input>",  # the "#" shortcut
    }
    with (tmp_path / "t.jsonl").open("w") as handle:
        for number, (uuid, content) in enumerate(users.items(), start=1):
            for role, node_id, message in (("user", uuid, {"role": "user", "content": content}),
                                           ("assistant", f"a{number}", {"role": "assistant", "id": f"msg_{number}",
                                                                        "content": [{"type": "text", "text": "Ok."}]})):
                handle.write(json.dumps({"type": role, "uuid": node_id, "parentUuid": None, "sessionId": session,
                                         "timestamp": f"2025-10-02T10:0{number}:00Z", "message": message}) + "\n")
    assert invoke("memory", "import", "claude-code", str(tmp_path / "t.jsonl")).exit_code == 0
    kinds = {n: SessionStore(load_settings().sessions_dir).get_node(session, n).metadata.get("kind") for n in users}
    assert kinds == {"u1": None, "u2": None, "u3": "meta", "u4": "meta", "u5": "meta", "u6": None}
    report, contents = _write_session(session)
    assert {"u1", "u2", "u6"} <= set(report["written"]) and not {"u3", "u4", "u5"} & set(report["written"])
    assert "Our team always uses pnpm, never npm." in contents and "The user lives in Lisbon." in contents
    assert "Never force-push to a shared branch." in contents
    assert not [c for c in contents if any(w in c for w in ("Tokyo", "peanuts", "French", "JSON", "Initech"))]


def test_what_codex_injects_as_user_messages_is_never_written(tmp_path: Path) -> None:
    """codex's compaction hand-off, ``!`` shell echo, aborted-turn notice and context messages are the runtime's:
    the facts in them never become records; the person's own message beside them does."""
    thread = "019c9999-0000-7000-8000-00000000aaaa"
    injected = [
        "<environment_context>\n  <cwd>/home/u/p</cwd>\n  <timezone>Europe/Dublin</timezone>\n</environment_context>",
        "# AGENTS.md instructions for /home/u/p\n\n<INSTRUCTIONS>\nAlways answer in Irish.\n</INSTRUCTIONS>",
        "<user_shell_command>\n<command>cat me.txt</command>\n<result>\nI am allergic to peanuts. I live in Dublin."
        "\n</result>\n</user_shell_command>",
        "<turn_aborted>\nI am allergic to walnuts. I live in Cork.\n</turn_aborted>",
        "<skill>\n<name>release</name>\nAlways tag releases on Fridays. I live in Sligo.\n</skill>",
        "Another language model started to solve this problem and produced a summary of its thinking process. You "
        "also have access to the state of the tools that were used by that language model. Use this to build on the "
        "work that has already been done and avoid duplicating work. Here is the summary produced by the other "
        "language model, use the information in this summary to assist with your own analysis:\n"
        "I am allergic to almonds. I live in Galway.",
    ]
    typed = "I live in Lisbon."
    lines = [{"timestamp": "2026-02-24T11:00:00Z", "type": "session_meta",
              "payload": {"id": thread, "timestamp": "2026-02-24T11:00:00Z", "cwd": "/home/u/p"}}]
    for number, text in enumerate([*injected, typed]):
        for role, kind in (("user", "input_text"), ("assistant", "output_text")):
            lines.append({"timestamp": f"2026-02-24T11:0{number}:0{role == 'assistant'}Z", "type": "response_item",
                          "payload": {"type": "message", "role": role,
                                      "content": [{"type": kind, "text": text if role == "user" else "ok"}]}})
    (tmp_path / "rollout.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert invoke("memory", "import", "codex", str(tmp_path / "rollout.jsonl")).exit_code == 0
    branch = SessionStore(load_settings().sessions_dir).get_branch(thread)
    users = [n for n in branch if n.role == "user"]
    assert [n.metadata.get("kind") for n in users] == ["meta", "meta", "local_command", "interrupt", "meta",
                                                       "compaction_summary", None]
    report, contents = _write_session(thread)
    assert report["written"] == [n.id for n in branch if n.role == "assistant" or n is users[-1]]
    assert contents == {"The user lives in Lisbon."}


BRANCHED = "branched-0001"


def branched_transcript(path: Path, turns: list[tuple[str, str | None, str]]) -> None:
    """A Claude Code transcript of ``(uuid, parentUuid, person's text)`` turns, each answered "Noted." by
    ``a<uuid>``; a turn whose parent is an earlier turn's answer makes a branch (an edited prompt, a rewind)."""
    with path.open("w") as handle:
        for minute, (uuid, parent, text) in enumerate(turns):
            for role, node_id, parent_id, message in (
                    ("user", uuid, parent, {"role": "user", "content": text}),
                    ("assistant", f"a{uuid}", uuid, {"role": "assistant", "id": f"msg_{uuid}", "type": "message",
                                                     "content": [{"type": "text", "text": "Noted."}]})):
                handle.write(json.dumps({"type": role, "uuid": node_id, "parentUuid": parent_id,
                                         "isSidechain": False, "sessionId": BRANCHED, "message": message,
                                         "timestamp": f"2025-11-01T10:{minute:02d}:0{role == 'assistant'}Z"}) + "\n")


def records_by_content(ws: MemoryWorkspace) -> dict[str, bool]:
    """``{record text: whether its footnote says it is from an abandoned branch}``."""
    return {record.content: any(e.time and e.time.endswith("(abandoned branch)") for e in record.evidence)
            for record in ws.records()}


def test_going_on_from_an_edited_away_prompt_restores_its_branch_and_writes_it(tmp_path: Path) -> None:
    """The person edited a prompt (a sibling branch), then went back to the first one and went on: the first
    branch is live again and written once, the edited one is the abandoned branch now."""
    first = [("u1", None, "For the web API we'll use Flask."), ("u2", "au1", "My favourite colour is blue."),
             ("u3", "au1", "My favourite colour is purple."), ("u4", "au3", "I live in Paris.")]
    branched_transcript(tmp_path / "t.jsonl", first)
    assert invoke("memory", "import", "claude-code", str(tmp_path / "t.jsonl")).exit_code == 0
    report, _ = _write_session(BRANCHED)
    assert report["written"] == ["u1", "au1", "u3", "au3", "u4", "au4"]
    branched_transcript(tmp_path / "t.jsonl", [*first, ("u5", "au2", "I now work at Acme Corp.")])
    assert invoke("memory", "import", "claude-code", str(tmp_path / "t.jsonl")).exit_code == 0
    store = SessionStore(load_settings().sessions_dir)
    assert [n.id for n in store.get_branch(BRANCHED)] == ["u1", "au1", "u2", "au2", "u5", "au5"]
    report, _ = _write_session(BRANCHED)
    assert report["written"] == ["u2", "au2", "u5", "au5"] and report["pending"] == 0
    records = records_by_content(MemoryWorkspace.open(load_settings(), create=True))
    assert records["The user's favourite colour is blue."] is False  # the branch gone back to: current
    assert records["The user now works at Acme Corp."] is False
    assert records["The user's favourite colour is purple."] is True  # the edited branch: abandoned now
    assert records["The user lives in Paris."] is True
    assert _write_session(BRANCHED)[0]["written"] == []


def test_the_import_a_wrong_format_suggests_quotes_a_path_with_a_space(tmp_path: Path) -> None:
    """Was: `openprogram memory import codex /…/my rollouts/crud copy.jsonl`, three arguments in a shell."""
    import re
    import shlex

    folder = tmp_path / "my rollouts"
    folder.mkdir()
    rollout = folder / "crud copy.jsonl"
    rollout.write_text((FIXTURES / "codex" / "crud.jsonl").read_text())
    (folder / "crud.jsonl").write_text(rollout.read_text())  # (two: the folder is named, not its one file)
    for given in (rollout, folder):
        error = json.loads(invoke("memory", "import", "claude-code", str(given), "--json").stdout)
        [command] = [shlex.split(c) for c in re.findall(r"`([^`]+)`", error["message"])]
        assert command == ["openprogram", "memory", "import", "codex", str(given)], given
