"""A minimal agent runtime with memory wired in through the provider interface.

    .venv/bin/python examples/chat_loop.py            # type lines; Ctrl-D ends
    .venv/bin/python examples/chat_loop.py --script   # a scripted run

The "model" here just echoes; what matters is where the nine hooks sit:
system prompt at session start, recall before each turn, a write after each
turn, extract_before_discard before compaction, a forced write at shutdown.
"""

from __future__ import annotations

import argparse
import sys

from openprogram_memory.config import load_settings
from openprogram_memory.provider import get_provider
from openprogram_memory.sessions.store import SessionStore

SCRIPT = [
    "Hi! I'm Dana and I run the data team at Acme.",
    "Always answer in metric units, please.",
    "We decided to use FastAPI for the billing service.",
    "What do you remember about the billing service?",
]


def reply(system: str, recall: str, text: str) -> str:
    """Stand-in for a model call: shows what memory contributed."""
    parts = [f"(echo) {text}"]
    if recall:
        parts.append(f"[recalled {recall.count(chr(10) + '- ')} record(s)]")
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", default=None)
    parser.add_argument("--script", action="store_true")
    args = parser.parse_args()
    settings = load_settings(args.state)
    memory = get_provider(settings)
    store = SessionStore(settings.sessions_dir)
    session = store.create_session()
    memory.initialize(session)
    system = memory.system_prompt()  # core block, fenced once
    print(f"session {session}; memory backend {memory.name}; core block {len(system)} chars")
    lines = SCRIPT if args.script else (line.rstrip("\n") for line in sys.stdin)
    history = []
    for text in lines:
        if not text.strip():
            continue
        recall = memory.search(text)  # before the turn
        store.append(session, "user", text)
        answer = reply(system, recall, text)
        store.append(session, "assistant", answer)
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        print(f"> {text}\n{answer}")
        failure = memory.write(session)  # after the turn: usually below threshold, returns at once
        if failure is not None and not failure.retryable:
            print(f"[memory: {failure.code.value}]")
        if len(history) > 6:  # pretend the context is full: compact the oldest turns
            keep = memory.extract_before_discard(history[:4])
            history = ([{"role": "system", "content": keep}] if keep else []) + history[4:]
    memory.shutdown()  # forced write of everything still pending
    print("after shutdown, recall for 'billing':")
    print(memory.search("billing service") or "(nothing)")


if __name__ == "__main__":
    main()
