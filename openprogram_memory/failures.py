"""The one closed set of failure codes (architecture §6).

Every error that leaves the library — to the CLI, JSON output, HTTP, the
event bus or ``writer-status.json`` — is a :class:`MemoryFailure` carrying a
:class:`FailureCode`. Nothing outside this enum is ever reported.
"""

from __future__ import annotations

import enum
from typing import Any


class FailureCode(str, enum.Enum):
    """Stable failure codes; the string value is the wire format."""

    # session / setup
    MISSING_SESSION_ID = "MISSING_SESSION_ID"
    SESSION_NODES_UNAVAILABLE = "SESSION_NODES_UNAVAILABLE"
    WRITER_NO_PROGRESS = "WRITER_NO_PROGRESS"
    WRITER_PRECONDITION_FAILED = "WRITER_PRECONDITION_FAILED"
    MEMORY_PROVIDER_RESOLUTION_FAILED = "MEMORY_PROVIDER_RESOLUTION_FAILED"
    MEMORY_DISABLED = "MEMORY_DISABLED"
    # model
    MODEL_TRANSPORT = "MODEL_TRANSPORT"
    MODEL_RATE_LIMIT = "MODEL_RATE_LIMIT"
    MODEL_PROVIDER_INTERNAL = "MODEL_PROVIDER_INTERNAL"
    MODEL_AUTHENTICATION = "MODEL_AUTHENTICATION"
    MODEL_AUTHORIZATION = "MODEL_AUTHORIZATION"
    MODEL_INVALID_REQUEST = "MODEL_INVALID_REQUEST"
    MODEL_CONTEXT_LENGTH = "MODEL_CONTEXT_LENGTH"
    MODEL_CONTENT_POLICY = "MODEL_CONTENT_POLICY"
    MODEL_TIMEOUT = "MODEL_TIMEOUT"
    MODEL_FAILURE_UNKNOWN = "MODEL_FAILURE_UNKNOWN"
    # transaction
    APPEND_ONLY_REQUIRED = "APPEND_ONLY_REQUIRED"
    COMMIT_REJECTED = "COMMIT_REJECTED"
    CONCURRENT_UPDATE = "CONCURRENT_UPDATE"
    EMBEDDING_UNAVAILABLE = "EMBEDDING_UNAVAILABLE"
    GIT_COMMIT_FAILED = "GIT_COMMIT_FAILED"
    GIT_UNAVAILABLE = "GIT_UNAVAILABLE"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    INVALID_TOPIC_FORMAT = "INVALID_TOPIC_FORMAT"
    MEMORY_NOT_FOUND = "MEMORY_NOT_FOUND"
    MISSING_SOURCE = "MISSING_SOURCE"
    PATCH_CONFLICT = "PATCH_CONFLICT"
    PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
    READ_ONLY_PATH = "READ_ONLY_PATH"
    # sync
    REMOTE_UNAVAILABLE = "REMOTE_UNAVAILABLE"
    # fallbacks
    TRANSACTION_FAILURE_UNKNOWN = "TRANSACTION_FAILURE_UNKNOWN"
    WRITER_FAILURE_UNKNOWN = "WRITER_FAILURE_UNKNOWN"


# Codes that are retryable whatever the context. MODEL_* codes are retryable
# only when the provider says so, so the flag is carried per failure.
ALWAYS_RETRYABLE = frozenset(
    {FailureCode.CONCURRENT_UPDATE, FailureCode.GIT_COMMIT_FAILED, FailureCode.EMBEDDING_UNAVAILABLE,
     FailureCode.REMOTE_UNAVAILABLE}
)
MODEL_RETRYABLE = frozenset(
    {
        FailureCode.MODEL_TRANSPORT,
        FailureCode.MODEL_RATE_LIMIT,
        FailureCode.MODEL_PROVIDER_INTERNAL,
        FailureCode.MODEL_TIMEOUT,
    }
)

EXIT_OK = 0
EXIT_BUG = 1
EXIT_USAGE = 64  # EX_USAGE
EXIT_REJECTED = 65  # EX_DATAERR
EXIT_DISABLED = 69  # EX_UNAVAILABLE
EXIT_RETRYABLE = 75  # EX_TEMPFAIL

_USAGE_CODES = frozenset(
    {FailureCode.INVALID_ARGUMENT, FailureCode.PATH_OUTSIDE_WORKSPACE, FailureCode.READ_ONLY_PATH,
     FailureCode.MISSING_SESSION_ID}
)

_HTTP_STATUS = {
    FailureCode.CONCURRENT_UPDATE: 409,
    FailureCode.MEMORY_NOT_FOUND: 404,
    FailureCode.GIT_UNAVAILABLE: 503,
    FailureCode.REMOTE_UNAVAILABLE: 503,
    FailureCode.MEMORY_DISABLED: 503,
    FailureCode.GIT_COMMIT_FAILED: 500,
}


def default_retryable(code: FailureCode) -> bool:
    """Whether ``code`` is retryable when nothing more specific is known."""
    return code in ALWAYS_RETRYABLE or code in MODEL_RETRYABLE


class MemoryFailure(Exception):
    """A failure with a stable code. ``WriteFailure`` is the same class.

    ``details`` carries machine-readable context (file, line, rule, ids) that
    JSON output passes through unchanged.
    """

    def __init__(
        self,
        code: FailureCode | str,
        message: str,
        *,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.code = FailureCode(code)
        self.retryable = default_retryable(self.code) if retryable is None else bool(retryable)
        self.message = message
        self.details = dict(details or {})
        super().__init__(f"{self.code.value}: {message}")

    # The reference implementation named these (reason, retryable, reason_code).
    @property
    def reason_code(self) -> str:
        return self.code.value

    @property
    def reason(self) -> str:
        return self.message

    @property
    def exit_code(self) -> int:
        """The sysexits code for the CLI: one per code, whatever raised it (README's table)."""
        if self.code is FailureCode.MEMORY_DISABLED:
            return EXIT_DISABLED
        if self.retryable:
            return EXIT_RETRYABLE
        if self.code in _USAGE_CODES:
            return EXIT_USAGE
        return EXIT_REJECTED

    @property
    def hint(self) -> str | None:
        """What to do about it, when the failure names it: the command in ``details["repair"]``."""
        repair = self.details.get("repair")
        return f"run `{repair}`" if isinstance(repair, str) and repair else None

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS.get(self.code, 400)

    def to_json(self) -> dict[str, Any]:
        """The one error object every JSON surface uses."""
        out: dict[str, Any] = {
            "ok": False,
            "code": self.code.value,
            "retryable": self.retryable,
            "message": self.message,
        }
        if self.details:
            out["details"] = self.details
        return out


WriteFailure = MemoryFailure


def problem_line(what: str, record: dict[str, Any], log: Any) -> str:
    """One line for a recorded problem (``memory status``: the writer's last failure, a hook's last problem):
    ``what``, when, for which session, its code and the first line of its message, then what to do — the
    failure's own hint when it had one, else where its log is."""
    session = record.get("session")
    lines = str(record.get("message") or "").strip().splitlines()
    hint = record.get("hint")
    todo = hint if isinstance(hint, str) and hint else f"its log: {log}"
    return (f"{what} at {record.get('at')}{f' (session {session})' if session else ''}: {record.get('code')}: "
            f"{lines[0] if lines else '(no message)'} — {todo}")


def as_failure(exc: BaseException, fallback: FailureCode = FailureCode.TRANSACTION_FAILURE_UNKNOWN) -> MemoryFailure:
    """Classify any exception; unclassified ones are never retryable."""
    if isinstance(exc, MemoryFailure):
        return exc
    return MemoryFailure(fallback, f"{type(exc).__name__}: {exc}", retryable=False)
