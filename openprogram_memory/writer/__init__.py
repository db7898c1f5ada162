"""The writer: conversations in the session store → cited records in topics (architecture §5, §6).

- :mod:`.pipeline` — ``write()`` (per turn / forced) and one pass, ``write_session()``;
- :mod:`.batching` — pending turns, due-ness, batch cutting, archive frames;
- :mod:`.runner` — one writer run in the staged transaction, repaired once;
- :mod:`.backend` — the backend interface and registry (``rules``, ``anthropic:<model>``);
- :mod:`.rules` / :mod:`.statements` — the offline writer and its extractor;
- :mod:`.reviewed` — the "reviewed, nothing durable" ledgers;
- :mod:`.backfill` — archived sources no topic cites yet;
- :mod:`.watcher` — the idle watcher;
- :mod:`.journal` — writer-status.json, agent-history.jsonl, events.jsonl.

Nothing is imported here: importing the package does no I/O and pulls in no backend.
"""
