"""Memory for agents that are not this runtime: Claude Code command hooks (architecture §15 "Agents").

The provider interface of architecture §10 mapped onto another agent's hook points:
core block at session start, recall before each turn, import + write when
a turn or the session ends. Nothing here imports the CLI libraries: the
hook runs on every prompt and must start fast.
"""
