"""The ``anthropic:<model>`` writer: a Messages API tool-use loop (architecture §5).

One run is one conversation with the model: the first user message holds the
batch's turns verbatim and the current topic tree; the model reads and edits
the staging copy through :mod:`openprogram_memory.writer.tools` and ends with
``commit_edits``. At most ``request.max_rounds`` requests are sent. Provider
errors become :class:`MemoryFailure` with a ``MODEL_*`` code and the
provider's retryability (:func:`classify_error`).

Environment: this module reads ``ANTHROPIC_API_KEY`` and
``ANTHROPIC_BASE_URL`` itself, at run time. It is the one deliberate
exception to "only ``config.py`` reads the environment": a secret does not
belong in the settings object, which is printed by ``memory config list``.
Both are passed to the SDK explicitly, so the SDK's own credential discovery
(profiles, config files) never runs.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..failures import FailureCode, MemoryFailure
from .backend import NOTHING_DURABLE, WriterRequest, WriterRun
from .prompts import system_prompt, user_message
from .tools import COMMIT_TOOL, run_tool, tools_for

if TYPE_CHECKING:
    import anthropic
    import httpx2

    from ..transaction.staging import Staging
    from ..memory import MemoryWorkspace

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_TOKENS = 8192
TIMEOUT_SECONDS = 120.0
# The pass holds the write lock while it waits: fail fast and let the
# watcher's next poll retry rather than sleep in the SDK's backoff.
MAX_RETRIES = 0

NO_KEY_MESSAGE = "No Anthropic API key: set ANTHROPIC_API_KEY or use memory.writer.model=rules"
NUDGE = (
    "You ended your turn without calling commit_edits. If your edits are complete (or nothing in the "
    "batch is worth recording), call commit_edits now; otherwise finish the edits first."
)
COMMIT_BLOCKED = (
    "not committed: another tool call in this message failed (see its result). "
    "Fix it, then call commit_edits again."
)

_CONTEXT_LENGTH_RE = re.compile(
    r"prompt is too long|context (?:window|length|limit)|too many (?:input )?tokens|maximum context", re.IGNORECASE
)
_CONTENT_POLICY_RE = re.compile(r"content (?:filtering )?polic|content filter", re.IGNORECASE)


class AnthropicWriter:
    """A :class:`~openprogram_memory.writer.backend.WriterBackend` over the Messages API.

    ``http_client`` (an ``httpx2.Client``, the HTTP library this SDK uses)
    replaces the SDK's own client; tests pass one with a replay transport.
    ``api_key``/``base_url`` override the environment.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: "httpx2.Client | None" = None,
        max_retries: int = MAX_RETRIES,
        timeout: float = TIMEOUT_SECONDS,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self._api_key = api_key
        self._base_url = base_url
        self._http_client = http_client
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_tokens = max_tokens

    # -- the client ------------------------------------------------------
    def _client(self) -> "anthropic.Anthropic":
        """A client for one run; MODEL_AUTHENTICATION before any request if there is no key."""
        api_key = (self._api_key or os.environ.get(API_KEY_ENV) or "").strip()
        if not api_key:
            raise MemoryFailure(FailureCode.MODEL_AUTHENTICATION, NO_KEY_MESSAGE, retryable=False)
        import anthropic  # imported late: the rules writer and the CLI never pay for it

        base_url = self._base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        return anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=self._http_client,
        )

    def _create(self, client: "anthropic.Anthropic", system: str, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> Any:
        import anthropic

        try:
            return client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                tools=tools,  # type: ignore[arg-type]  # plain dicts; the SDK's TypedDicts describe the same JSON
                messages=messages,  # type: ignore[arg-type]  # as above
            )
        except anthropic.AnthropicError as exc:
            raise classify_error(exc) from exc

    # -- the run -----------------------------------------------------------
    def run(self, request: WriterRequest, staging: "Staging", ws: "MemoryWorkspace") -> WriterRun:
        """Drive the tool-use loop on ``staging``; raise MemoryFailure (MODEL_*) on provider errors.

        Returns ``committed=False`` when the model stopped (or ran out of
        rounds) without calling ``commit_edits``; the pipeline decides what
        its edits are worth.
        """
        system = system_prompt(request.stage)
        prompt = user_message(request)
        run = WriterRun(backend=self.name, prompt=prompt)
        client = self._client()
        try:
            self._loop(client, request, staging, system, run, ws)
        finally:
            if self._http_client is None:
                client.close()  # never close an injected client: its owner may reuse it
        return run

    def _loop(self, client: "anthropic.Anthropic", request: WriterRequest, staging: "Staging",
              system: str, run: WriterRun, ws: "MemoryWorkspace") -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": run.prompt}]
        tools = tools_for(request)
        nudged = False
        while run.rounds < request.max_rounds:
            response = self._create(client, system, messages, tools)
            run.rounds += 1
            _add_usage(run, response.usage)
            run.stop_reason = response.stop_reason
            text = "".join(block.text for block in response.content if block.type == "text").strip()
            if text:
                run.reply = text
            if response.stop_reason == "refusal":
                raise MemoryFailure(FailureCode.MODEL_CONTENT_POLICY,
                                    f"the model refused the batch (stop_reason=refusal): {text[:200]}", retryable=False)
            if response.content:  # an empty assistant turn is invalid input for the next request
                messages.append({"role": "assistant", "content": [_as_param(block) for block in response.content]})
            tool_uses = [block for block in response.content if block.type == "tool_use"]
            if not tool_uses:
                if response.stop_reason == "model_context_window_exceeded":
                    raise MemoryFailure(FailureCode.MODEL_CONTEXT_LENGTH,
                                        "the conversation outgrew the model's context window", retryable=False)
                if nudged:
                    run.notes.append("model stopped without commit_edits")
                    return
                nudged = True
                messages.append({"role": "user", "content": NUDGE})
                continue
            results, committed = _run_tools(staging, tool_uses, run, ws)
            if committed:
                run.committed = True
                commit = next(block for block in tool_uses if block.name == COMMIT_TOOL)
                if (commit.input or {}).get("nothing_durable") is True:
                    # a verifiable verdict: the runner accepts it only if nothing changed
                    run.verdict = NOTHING_DURABLE
                    run.reviewed = [turn.source_id for turn in request.turns]
                return
            messages.append({"role": "user", "content": results})
        run.stop_reason = "max_rounds"
        run.notes.append(f"max rounds ({request.max_rounds}) reached without commit_edits")


def _run_tools(staging: "Staging", tool_uses: list[Any], run: WriterRun,
               ws: "MemoryWorkspace | None" = None) -> tuple[list[dict[str, Any]], bool]:
    """Execute one message's tool calls in order; commit only if none of them failed."""
    results: list[dict[str, Any]] = []
    failed = False
    commit_id: str | None = None
    for block in tool_uses:
        if block.name == COMMIT_TOOL:
            commit_id = block.id
            continue
        text, is_error = run_tool(staging, block.name, block.input, ws)
        failed = failed or is_error
        run.notes.append(f"{block.name}: {'error: ' if is_error else ''}{text.splitlines()[0] if text else ''}"[:300])
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.id, "content": text or "(empty)"}
        if is_error:
            result["is_error"] = True
        results.append(result)
    if commit_id is None:
        return results, False
    if failed:
        run.notes.append(f"{COMMIT_TOOL}: refused, another call in the same message failed")
        results.append({"type": "tool_result", "tool_use_id": commit_id, "content": COMMIT_BLOCKED, "is_error": True})
        return results, False
    run.notes.append(COMMIT_TOOL)
    return results, True


def _as_param(block: Any) -> dict[str, Any]:
    """An assistant content block as it is sent back in the next request."""
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return block.model_dump(mode="json", exclude_none=True)


def _add_usage(run: WriterRun, usage: Any) -> None:
    """Input tokens count cache writes and reads too: all of it was prompt."""
    if usage is None:
        return
    run.input_tokens += (usage.input_tokens or 0) + (getattr(usage, "cache_creation_input_tokens", 0) or 0) \
        + (getattr(usage, "cache_read_input_tokens", 0) or 0)
    run.output_tokens += usage.output_tokens or 0


def classify_error(exc: BaseException) -> MemoryFailure:
    """Map an SDK error to the closed MODEL_* codes with the provider's retryability."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):  # before APIConnectionError: it is a subclass
        return MemoryFailure(FailureCode.MODEL_TIMEOUT, "the Anthropic API did not answer in time", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        return MemoryFailure(FailureCode.MODEL_TRANSPORT, f"cannot reach the Anthropic API: {cause}", retryable=True)
    if not isinstance(exc, anthropic.APIStatusError):
        return MemoryFailure(FailureCode.MODEL_FAILURE_UNKNOWN, f"{type(exc).__name__}: {exc}", retryable=False)
    status = exc.status_code
    detail = exc.api_message or str(exc)
    message = f"Anthropic API {status} {exc.type or 'error'}: {detail}"
    details = {"status": status, "request_id": exc.request_id}
    code, retryable = _status_code(status, detail)
    if status == 429 and exc.response.headers.get("retry-after"):
        details["retry_after"] = exc.response.headers["retry-after"]
    return MemoryFailure(code, message, retryable=retryable, details=details)


def _status_code(status: int, detail: str) -> tuple[FailureCode, bool]:
    if status == 400:
        if _CONTEXT_LENGTH_RE.search(detail):
            return FailureCode.MODEL_CONTEXT_LENGTH, False
        if _CONTENT_POLICY_RE.search(detail):
            return FailureCode.MODEL_CONTENT_POLICY, False
        return FailureCode.MODEL_INVALID_REQUEST, False
    if status == 401:
        return FailureCode.MODEL_AUTHENTICATION, False
    if status in (402, 403):  # 402: billing — the key may not use the API now
        return FailureCode.MODEL_AUTHORIZATION, False
    if status == 413:  # request_too_large: the prompt, not the transport
        return FailureCode.MODEL_CONTEXT_LENGTH, False
    if status in (404, 422):
        return FailureCode.MODEL_INVALID_REQUEST, False
    if status in (408, 504):
        return FailureCode.MODEL_TIMEOUT, True
    if status == 429:
        return FailureCode.MODEL_RATE_LIMIT, True
    if status >= 500:  # 500 api_error, 503, 529 overloaded_error
        return FailureCode.MODEL_PROVIDER_INTERNAL, True
    return FailureCode.MODEL_FAILURE_UNKNOWN, False
