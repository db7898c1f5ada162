"""The organizer (``memory sleep``): merge, move, split and order topics.

:func:`reorganize` runs one transaction; :func:`organize_due` tells the
writer when to call it; :func:`classify_statement` says what a statement
is for (rule, preference, identity, project, other).
"""

from ..placement.classify import classify_statement, explain_statement
from .due import organize_due
from .sleep import reorganize, register_planner

__all__ = ["classify_statement", "explain_statement", "organize_due", "reorganize", "register_planner"]
