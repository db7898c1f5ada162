"""A base for small immutable value classes on the hook path (``dataclasses`` would import ``inspect``).

The Claude Code hook imports settings, the layout and search hits on every
prompt; ``dataclasses`` costs about 15 ms of its 150 ms budget. A subclass
lists its fields in ``__slots__`` and sets them once with :meth:`_init`;
instances compare by value, print like a dataclass and refuse assignment.
"""

from __future__ import annotations

from typing import Any


class Frozen:
    """Immutable, compared and printed by the values of its ``__slots__``; unhashable unless a subclass says."""

    __slots__: tuple[str, ...] = ()

    def _init(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name})")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # value classes holding dicts and lists

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
