"""The bounded model loop: observe, ask the model, act, until done or a bound ends the episode.

Every bound that can end an episode is recorded as the stop reason. Bad model output is
rejected with a reason the model sees, recorded, and counted against the action budget.

One module (just over 400 lines): the loop and the handling of what can end or refit one request.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx2
import openai

from adapter.actions import (
    NO_ANSWER,
    Action,
    Done,
    FinishSchema,
    Rejection,
    action_to_arguments,
    parse_action,
    parse_text_action,
    tool_schemas,
)
from adapter.context import MAX_SCALE, ContextWindow, conversation_tokens, estimate_tokens
from adapter.delivery import NOT_DELIVERED_CAUSE, DeliveryWatch
from adapter.failover import Fallback, ServingProtocol, ServingTurn
from adapter.lines import flat
from adapter.modelclient import ReplyCutOff, StreamWatch
from adapter.observation import Observation
from adapter.prompts import (
    RESULT_FOLLOWS,
    first_message,
    result_message,
    result_ok,
    result_rejected,
    resumed_message,
    summary_request,
    system_prompt,
)
from adapter.reply import EndpointFault, JsonProblem, ModelCall, ToolCall, clean_text, load_json
from adapter.reply_body import read_reply
from adapter.serverinfo import context_from_refusal, requested_in_refusal
from adapter.stream import StreamCut
from adapter.transcript import (
    AgentTranscript,
    Bounds,
    Resumed,
    Step,
    server_headers,
    switch_text,
    switch_user_messages,
)
from computerops.core.hashing import canonical_sha256
from computerops.core.vocabulary import StopReason, ToolMode


def result_line(note: str, rejection: Rejection | None) -> str:
    """What the model is told of an action's result: on one line, whatever page text its note or reason quotes (a
    dialog's question, a control's name), so that it never begins a line of its own (a forged `Observation:`)."""
    return result_ok(flat(note)) if rejection is None else result_rejected(rejection.cause, flat(rejection.reason))


class ActionOutcomeLike(Protocol):
    @property
    def ok(self) -> bool: ...
    @property
    def rejection(self) -> Rejection | None: ...
    @property
    def note(self) -> str: ...
    @property
    def navigated(self) -> bool: ...


class Environment(Protocol):
    """What the loop needs of a page: observe it, act on it (the browser driver is one)."""

    async def observe(self) -> Observation: ...

    async def act(self, action: Action, number: int) -> ActionOutcomeLike: ...


OVER_CAP_SLACK = 8
"""Completion tokens over max_tokens still taken as the cap kept: a server may count an end-of-text token or a
template's few tokens in the completion without ignoring the cap."""


def over_cap(call: ModelCall, cap: int) -> bool:
    """Whether the server counted more completion tokens than the request's max_tokens (llama-cpp-python's function
    calling ignores it with tool_choice auto): the reply ran past the limit the adapter set."""
    return call.completion_tokens is not None and call.completion_tokens > cap + OVER_CAP_SLACK


def _interpret(call: ModelCall, mode: ToolMode, finish: FinishSchema, *, cap: int) -> Action | Rejection:
    """The action a reply asks for, or why it asks for none.

    Several tool calls in one reply: the first is carried out and the result says the others were not (the step
    records how many there were). A reply cut off at the response limit, or run past it (`over_cap`), that does not
    parse is `truncated_reply` when it had begun an action (`action_begun`); one that never began any is `no_action`,
    and the model is told to begin with its action, not to shorten one it never wrote."""
    if call.invalid_text:
        return Rejection(cause="invalid_text", reason="The reply held text that is not valid Unicode (a lone "
                                                      "surrogate, or bytes that are not UTF-8). Reply with one action "
                                                      "in valid text.")
    if call.tool_calls:
        first = call.tool_calls[0]
        decided = parse_action(first.name, first.arguments, finish)
    elif mode == "native":
        decided = Rejection(cause="no_action", reason="No tool call was made. Call exactly one of the tools.")
    else:
        decided = parse_text_action(call.content, finish)
    cut = call.finish_reason == "length" or over_cap(call, cap)
    if not isinstance(decided, Rejection) or not cut or decided.cause == "truncated_reply":
        return decided
    if not action_begun(call, mode):
        return Rejection(cause="no_action", reason="The reply ran to the response length limit without beginning an "
                                                   "action. Begin your reply with the action, and write less besides.")
    return Rejection(cause="truncated_reply", reason="The reply was cut off at the response length limit "
                                                     f"before its action was complete ({decided.reason}) "
                                                     "Reply with a shorter action.")


def action_begun(call: ModelCall, mode: ToolMode) -> bool:
    """Whether a reply began an action: a tool call, or (where the text protocol is read) a `{` that could open its
    JSON object. A reply of prose alone began none, however long it ran."""
    return bool(call.tool_calls) or (mode != "native" and "{" in (call.content or ""))


def _history_tool_call(call: ToolCall, call_id: str) -> dict[str, Any]:
    """The tool call as echoed back in the conversation.

    Arguments that are not valid JSON are echoed as `{}`: some servers' chat templates parse the
    history's arguments and fail on the model's own malformed output. The transcript keeps the raw text.
    """
    try:
        load_json(call.arguments or "{}")
        arguments = call.arguments or "{}"
    except JsonProblem:
        arguments = "{}"
    return {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}




CONTEXT_REFUSALS = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|n_ctx|too many tokens|exceeds? the (model'?s? )?"
    r"(context|maximum)|prompt is too long|input is too long|max_model_len|tokens? limit", re.IGNORECASE)
"""How OpenAI, vLLM, llama.cpp, LM Studio and Ollama word a refusal of a prompt longer than the model's context."""


def context_refusal(error: openai.APIStatusError) -> bool:
    """Whether an HTTP 400 refuses the prompt for its length: the episode's context is exhausted (a bound of the
    episode), not the endpoint's failure."""
    return bool(CONTEXT_REFUSALS.search(str(error)))


def connection_detail(exc: openai.APIConnectionError) -> str:
    """What a failed connection met, as the transport said it (`Connection error.` alone names nothing)."""
    cause = exc.__cause__
    return f"{exc} ({type(cause).__name__}: {cause})" if cause is not None else str(exc)


class RequestBound(Exception):
    """A model request ran into a time bound: the per-request timeout or the rest of the episode's wall clock."""

    def __init__(self, which: Literal["request_timeout", "wall_clock"], limit_s: float) -> None:
        super().__init__(f"no reply within {limit_s:.1f} s ({which.replace('_', ' ')})")
        self.which = which
        self.limit_s = limit_s


class EnvironmentFailure(Exception):
    """The page could not be observed or acted on (browser crash, closed page): not the agent's fault."""


def infrastructure_cause(exc: BaseException | EndpointFault) -> str:
    """The cause an infrastructure failure is counted under: `HTTP 503`, `timeout`, `connection failed`,
    `request timeout` (our own per-request bound), `endpoint reply not_json` (and the other EndpointFault
    causes), `browser` (the page could not be observed or acted on), else the exception's type name."""
    if isinstance(exc, ReplyCutOff):  # the model client stopped reading a reply over the bound
        exc = exc.fault
    if isinstance(exc, EndpointFault):
        return f"endpoint reply {exc.cause}"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: test it first
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    if isinstance(exc, RequestBound):
        return "request timeout"
    if isinstance(exc, EnvironmentFailure):
        return "browser"
    return type(exc).__name__


@dataclass
class LoopState:
    """Where an episode's loop stands: what a checkpoint saves and a resumed process restores."""

    transcript: AgentTranscript
    window: ContextWindow
    mode: ToolMode
    next_number: int
    """The number of the next model reply."""
    started: float
    """`time.monotonic()` when the episode's wall clock started (a resumed loop sets it back by the time used)."""


@dataclass(frozen=True)
class PendingStep:
    """An action the model chose, about to be carried out: its reply is in the conversation, its result is not."""

    number: int
    action: dict[str, Any]
    call: ModelCall
    call_id: str
    echoed: bool


@dataclass(frozen=True)
class RecoveredStep:
    """What a resumed harness found of the action its checkpoint was written before, to be told as its result."""

    pending: PendingStep
    rejection: Rejection | None
    note: str


class Checkpoints(Protocol):
    """What the loop tells a long-running episode's checkpointer (computerops/persistence/checkpointing.py)."""

    async def started(self, state: LoopState) -> None: ...

    async def before_action(self, state: LoopState, pending: PendingStep) -> None: ...

    async def after_action(self, state: LoopState, step: Step) -> None: ...


class ModelLoop:
    """Drives one episode: `await ModelLoop(...).run(env, instruction)`."""

    def __init__(self, client: openai.AsyncOpenAI, model: str, bounds: Bounds, *, budget: int | None = None,
                 finish: FinishSchema = NO_ANSWER, token_scale: float = 1.0, checkpoints: Checkpoints | None = None,
                 serving: ServingProtocol | None = None, fallback: Fallback | None = None,
                 stream_watch: StreamWatch | None = None):
        self.serving = serving
        """The serving protocol (adapter/failover.py): streamed replies, and what a 429, a timeout or a cut stream
        leads to; None asks as ever (the client's own retries, any failure the endpoint's)."""
        self.fallback = fallback
        """The pinned fallback endpoint the serving protocol may ask."""
        self.stream_watch = stream_watch
        """Told by the clients' transports when a streamed reply begins to arrive (adapter/modelclient.py)."""
        self._turn: ServingTurn | None = None
        self._delivery = DeliveryWatch()
        """The server's prompt counts against what the steps sent (adapter/delivery.py)."""
        self._requests = 0
        """Model requests sent so far in this episode (the serving events name theirs)."""
        self._primary_unreachable = False
        """The primary endpoint could not be reached: later turns ask the fallback from the start."""
        self._usage_unasked = False
        """The server refused `stream_options`: streams are asked for without it (the usage where it still sends it)."""
        self.checkpoints = checkpoints
        """Told of the loop's state at its start, before each action and after each step (long-running episodes
        write their durable checkpoints from these: computerops/persistence/); None for an ordinary episode."""
        self.token_scale = token_scale
        """Server tokens per estimated token to start with (the run's probe of the server, where it counted)."""
        self.client = client
        self.model = model
        self.bounds = bounds
        self.budget = budget or bounds.action_budget
        self.finish = finish
        """The task's answer fields, added to `done` in the tools, the text protocol and the parser."""
        self._tools_tokens = estimate_tokens(json.dumps(tool_schemas(finish)))
        self._reply_tokens = bounds.max_response_tokens
        """The room planned for a reply: max_tokens, or the most completion tokens a server that ignores it counted
        (`_keep_room_for`)."""

    async def _request(
        self, messages: Sequence[dict[str, Any]], mode: ToolMode
    ) -> tuple[bytes, str, Mapping[str, str]]:
        """The reply's body, content type and response headers (HTTP errors raise openai's errors), from the
        endpoint the serving protocol's turn asks (the primary without one)."""
        client, model = self.client, self.model
        self._requests += 1
        if self.stream_watch is not None:
            self.stream_watch.began = False
        if self._turn is not None:
            self._turn.request = self._requests
            if self._turn.upstream == "fallback" and self.fallback is not None:
                client, model = self.fallback.client, self.fallback.model
        kwargs: dict[str, Any] = {
            "model": model, "messages": list(messages), "max_tokens": self.bounds.max_response_tokens,
            "temperature": self.bounds.temperature,
        }
        if self.serving is not None and self.serving.stream:
            kwargs["stream"] = True
            if not self._usage_unasked:
                kwargs["stream_options"] = {"include_usage": True}
        if self.bounds.seed is not None:
            kwargs["seed"] = self.bounds.seed
        if mode != "text":
            # tool_choice explicitly: some servers (llama.cpp's) leave the tools out of the prompt without it.
            kwargs["tools"] = tool_schemas(self.finish)
            kwargs["tool_choice"] = "auto"
        # The client's own request path (retries, auth, the bounded transport, openai's errors) without
        # `chat.completions.create`'s typed-params transform: ~5 ms of typing introspection over every message and
        # tool schema per request, which changes nothing in this body (tests/test_model_request.py checks it).
        response = await client.post("/chat/completions", body=kwargs, cast_to=httpx2.Response,
                                     options={"security": {"bearer_auth": True}})
        return response.content, response.headers.get("content-type", ""), response.headers

    async def summarise(self, state: LoopState) -> ModelCall | str:
        """Ask the model for a compaction's summary (computerops/persistence/, `model/1`): the conversation as the
        next request would send it, then `summary_request`, through the loop's own client, model, tool mode and
        bounds (the request timeout and what is left of the wall clock). The model's reply as read, or why there is
        none (an HTTP error, a refusal, a bound, a reply that is no chat completion, a conversation that no longer
        fits): never raised, so a failed summary leaves the episode to carry on uncompacted. It is not a step: it
        takes no reply number and nothing of the action budget (its time is the episode's wall clock's)."""
        messages = state.window.fit()
        if messages is None:
            return "the conversation does not fit the context"
        sent = [*messages, summary_request()]
        estimated = conversation_tokens(sent) + state.window.overhead
        began = time.monotonic()
        try:
            body, content_type, headers = await self._bounded(sent, state.mode, state.started)
        except (openai.APIError, RequestBound) as exc:
            return f"no summary: {infrastructure_cause(exc)}: {clean_text(str(exc))[0][:500]}"
        call = await asyncio.to_thread(
            read_reply, body, content_type=content_type, latency_s=time.monotonic() - began, estimated=estimated,
            request_sha256=canonical_sha256(sent), headers=server_headers(headers))
        if isinstance(call, EndpointFault):
            return f"no summary: {infrastructure_cause(call)}: {clean_text(call.detail)[0][:500]}"
        return call

    def _window(self, mode: ToolMode) -> ContextWindow:
        # Tool schemas are part of the prompt on every server, so they count against the context.
        window = ContextWindow(self.bounds.context_tokens - self._reply_tokens,
                               overhead=0 if mode == "text" else self._tools_tokens)
        window.scale = min(max(self.token_scale, 1.0), MAX_SCALE)  # never planning below the estimate
        return window

    @staticmethod
    async def _observe(env: Environment) -> Observation:
        try:
            return await env.observe()
        except Exception as exc:  # any failure of the page itself is the environment's, not the agent's
            raise EnvironmentFailure(f"observe failed: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    async def _act(env: Environment, action: Action, number: int) -> ActionOutcomeLike:
        try:
            return await env.act(action, number)
        except Exception as exc:
            raise EnvironmentFailure(f"action {number} failed: {type(exc).__name__}: {exc}") from exc

    async def run(self, env: Environment, instruction: str) -> AgentTranscript:
        """Run until done or a bound; every way the episode can end is recorded as its stop reason."""
        mode = self.bounds.tool_mode
        transcript = AgentTranscript(system_prompt=system_prompt(text_protocol_mode=mode == "text",
                                                                 finish=self.finish),
                                     instruction=instruction, tool_mode=mode, first_observation="",
                                     context_tokens=self.bounds.context_tokens,
                                     tool_results=self.bounds.tool_results)
        try:
            first = await self._observe(env)
        except EnvironmentFailure as exc:
            return self._infrastructure(transcript, exc)
        transcript.first_observation = first.text
        window = self._window(mode)
        transcript.token_scale = round(window.scale, 3)
        window.add({"role": "system", "content": transcript.system_prompt})
        window.add({"role": "user", "content": first_message(instruction, first.text)}, observation=first.text)
        state = LoopState(transcript=transcript, window=window, mode=mode, next_number=1, started=time.monotonic())
        if self.checkpoints is not None:
            await self.checkpoints.started(state)
        return await self._run_from(env, state)

    async def resume(self, env: Environment, state: LoopState,
                     recovered: RecoveredStep | None = None) -> AgentTranscript:
        """Carry on an episode a checkpoint holds (computerops/persistence/): `state` as the checkpoint restored it,
        and, when it was written before an action, what became of that action as the harness found out."""
        if recovered is not None:
            pending = recovered.pending
            try:
                step = await self._answer(env, state.window, state.transcript, pending.number, pending.call,
                                          pending.call_id, pending.echoed, pending.action, recovered.rejection,
                                          recovered.note, act_s=None, navigated=True)
            except EnvironmentFailure as exc:
                return self._infrastructure(state.transcript, exc)
            state.next_number = pending.number + 1
            if self.checkpoints is not None:
                await self.checkpoints.after_action(state, step)
        else:
            try:
                observation = await self._observe(env)
            except EnvironmentFailure as exc:
                return self._infrastructure(state.transcript, exc)
            state.window.add({"role": "user", "content": resumed_message(observation.text)},
                             observation=observation.text)
            state.transcript.resumes.append(Resumed(after_step=state.next_number - 1, observation=observation.text))
            if self.checkpoints is not None:
                await self.checkpoints.started(state)
        return await self._run_from(env, state)

    async def _run_from(self, env: Environment, state: LoopState) -> AgentTranscript:
        """The loop proper, from `state.next_number` on."""
        transcript, window, mode, started = state.transcript, state.window, state.mode, state.started
        for number in range(state.next_number, self.budget + 1):
            state.next_number, state.mode = number, mode
            if time.monotonic() - started > self.bounds.wall_clock_s:
                transcript.stop_reason = "wall_clock"
                return transcript
            messages = window.fit()
            if messages is None and mode == "auto" and window.overhead:
                # The tool schemas leave no room: the text protocol's description is far smaller.
                mode = self._to_text_protocol(window, transcript, number, "the tool schemas did not fit the context")
                messages = window.fit()
            if messages is None:
                transcript.stop_reason = "context_exhausted"
                if self._reply_tokens > self.bounds.max_response_tokens:
                    transcript.stop_detail = self._ignores_max_tokens("no prompt fits beside them")
                return transcript
            estimated = conversation_tokens(messages) + window.overhead  # the tool schemas are prompt too
            sent = messages
            if self.serving is not None:
                self._turn = ServingTurn(self.serving, number, transcript.serving, self.fallback,
                                         upstream="fallback" if self._primary_unreachable else "primary")
            began = time.monotonic()
            try:
                body, content_type, headers = await self._bounded(messages, mode, started)
            except openai.BadRequestError as exc:
                if context_refusal(exc):
                    # A refusal that names the server's context shrinks the window to it, and the request is
                    # sent once more, refitted; without a usable limit the episode's context is exhausted.
                    refitted = self._refit_after_refusal(window, transcript, messages, estimated, exc)
                    if refitted is None and mode == "auto" and window.overhead:
                        why = "the server refused a prompt with the tool schemas for its length"
                        mode = self._to_text_protocol(window, transcript, number, why)
                        refitted = window.fit()
                    if refitted is None:
                        return self._stop(transcript, "context_exhausted", f"the server refused the prompt: {exc}")
                elif mode == "auto" and "tool" in str(exc).lower():
                    mode = self._to_text_protocol(window, transcript, number, "the server refused the tool schemas")
                    refitted = window.fit() or messages
                else:
                    return self._infrastructure(transcript, exc)
                sent = refitted
                estimated = conversation_tokens(sent) + window.overhead
                answer = await self._send_again(sent, mode, started, transcript)
                if isinstance(answer, AgentTranscript):
                    return answer
                body, content_type, headers = answer
            except openai.APIError as exc:
                return self._infrastructure(transcript, exc)
            except RequestBound as bound:
                return self._bound_hit(transcript, bound)
            digest = canonical_sha256(list(sent))
            # Read in a thread: a long reply takes a while to parse and other episodes share this event loop.
            read = await asyncio.to_thread(
                read_reply, body, content_type=content_type, latency_s=time.monotonic() - began,
                estimated=estimated, request_sha256=digest, headers=server_headers(headers),
                streamed=self.serving is not None and self.serving.stream)
            while isinstance(read, StreamCut):  # nothing of a cut reply is carried out
                turn = self._turn
                assert turn is not None, "only the serving protocol asks for streams"
                if not turn.after_cut(len(read.content), read.tool_call_started, read.detail):
                    return self._stop(transcript, "stream_cut", f"reply {number}'s stream was cut ({read.detail}); "
                                                                "the turn is left unfinished and nothing of it was "
                                                                "carried out")
                try:
                    body, content_type, headers = await self._bounded(sent, mode, started)
                except openai.APIError as exc:
                    return self._infrastructure(transcript, exc)
                except RequestBound as bound:
                    return self._bound_hit(transcript, bound)
                read = await asyncio.to_thread(
                    read_reply, body, content_type=content_type, latency_s=time.monotonic() - began,
                    estimated=estimated, request_sha256=digest, headers=server_headers(headers), streamed=True)
            call = read
            if isinstance(call, EndpointFault):
                return self._infrastructure(transcript, call)
            if self._turn is not None and self._turn.upstream == "fallback":
                call = call.model_copy(update={"upstream": "fallback"})
            window.calibrate(call.prompt_tokens, estimated)
            transcript.token_scale = round(window.scale, 3)
            if self._undelivered(transcript, number, sent, call, mode):
                return transcript
            try:
                state.mode = mode
                finished = await self._step(env, state, number, call)
            except EnvironmentFailure as exc:
                return self._infrastructure(transcript, exc)
            if finished:
                return transcript
            if mode != "auto":  # auto mode goes over to the text protocol instead (below)
                self._keep_room_for(call, window)
            if mode == "auto" and over_cap(call, self.bounds.max_response_tokens):
                # The server ignores max_tokens with tools (each reply runs on for seconds and is cut where it
                # pleases, not where asked): the text protocol sends no tools.
                # (The step's call records how many completion tokens it counted against the cap.)
                why = "the server ignored max_tokens with the tool schemas"
                mode = self._to_text_protocol(window, transcript, number + 1, why)
        transcript.stop_reason = "budget_exhausted"
        return transcript

    def _keep_room_for(self, call: ModelCall, window: ContextWindow) -> None:
        """After a reply that ran past max_tokens (`over_cap`: the server ignores it), plan every later prompt with
        room for the longest reply the server has produced, not max_tokens: its next reply would otherwise overrun
        the context (llama.cpp answers HTTP 500). Old observations are elided to make the room; when nothing fits
        the episode stops `context_exhausted`, saying why (each step's call keeps the tokens it counted)."""
        if not over_cap(call, self.bounds.max_response_tokens) or call.completion_tokens is None:
            return
        if call.completion_tokens > self._reply_tokens:
            window.budget -= call.completion_tokens - self._reply_tokens
            self._reply_tokens = call.completion_tokens

    def _ignores_max_tokens(self, then: str) -> str:
        return (f"the server ignores max_tokens ({self.bounds.max_response_tokens}): a reply ran to "
                f"{self._reply_tokens} completion tokens, and {then}")

    async def _step(self, env: Environment, state: LoopState, number: int, call: ModelCall) -> bool:
        """Carry out one model reply; True when it finished the episode."""
        window, transcript, mode = state.window, state.transcript, state.mode
        decided = _interpret(call, mode, self.finish, cap=self.bounds.max_response_tokens)
        # Echo the server's own call id; invent one only when it sent none.
        call_id = (call.tool_calls[0].id if call.tool_calls else None) or f"call_{number}"
        # A tool call is echoed (and answered by a tool message) only when it named a function; content is a
        # string, never null: some servers' chat templates fail on a null assistant content.
        echoed = bool(call.tool_calls and call.tool_calls[0].name)
        assistant: dict[str, Any] = {"role": "assistant", "content": call.content or ""}
        if echoed:
            assistant["tool_calls"] = [_history_tool_call(call.tool_calls[0], call_id)]
        window.add(assistant, rejected_reply=isinstance(decided, Rejection))
        if isinstance(decided, Done):
            transcript.steps.append(Step(number=number, call=call, action=decided.model_dump(), rejection=None,
                                         note="finished", observation=None))
            transcript.finish = decided
            transcript.stop_reason = "finish"
            return True
        rejection: Rejection | None
        act_s: float | None = None
        navigated = False
        if isinstance(decided, Rejection):
            rejection, note, action = decided, "", None
        else:
            action = {"action": decided.action, **action_to_arguments(decided)}
            if self.checkpoints is not None:
                await self.checkpoints.before_action(state, PendingStep(number=number, action=action, call=call,
                                                                        call_id=call_id, echoed=echoed))
            began = time.perf_counter()
            outcome = await self._act(env, decided, number)
            act_s = round(time.perf_counter() - began, 4)
            rejection, note, navigated = outcome.rejection, outcome.note, outcome.navigated
        step = await self._answer(env, window, transcript, number, call, call_id, echoed, action, rejection, note,
                                  act_s=act_s, navigated=navigated)
        if self.checkpoints is not None:
            state.next_number = number + 1
            await self.checkpoints.after_action(state, step)
        return False

    async def _answer(self, env: Environment, window: ContextWindow, transcript: AgentTranscript, number: int,
                      call: ModelCall, call_id: str, echoed: bool, action: dict[str, Any] | None,
                      rejection: Rejection | None, note: str, *, act_s: float | None, navigated: bool) -> Step:
        """Observe the page after a step, tell the model the step's result with it, and record the step."""
        began = time.perf_counter()
        observation = await self._observe(env)
        observe_s = round(time.perf_counter() - began, 4)
        if len(call.tool_calls) > 1:
            note = (f"only the first of {len(call.tool_calls)} tool calls was considered; send one action per reply"
                    + (f"; {note}" if note else ""))
        result = result_line(note, rejection)
        if rejection is not None and len(call.tool_calls) > 1:
            result += f" (Only the first of {len(call.tool_calls)} tool calls was considered.)"
        content = result_message(result, observation.text)
        if echoed and transcript.tool_results == "user_message":
            # The server's chat template drops tool messages: the tool call is answered, and what it would have
            # carried follows where the model reads it.
            window.add({"role": "tool", "tool_call_id": call_id, "content": RESULT_FOLLOWS})
            window.add({"role": "user", "content": content}, observation=observation.text)
        elif echoed:
            window.add({"role": "tool", "tool_call_id": call_id, "content": content}, observation=observation.text)
        else:
            window.add({"role": "user", "content": content}, observation=observation.text)
        step = Step(number=number, call=call, action=action, rejection=rejection, note=note,
                    observation=observation.text, act_s=act_s, observe_s=observe_s, navigated=navigated)
        transcript.steps.append(step)
        return step

    def _undelivered(self, transcript: AgentTranscript, number: int, sent: Sequence[dict[str, Any]],
                     call: ModelCall, mode: ToolMode) -> bool:
        """Judge from the server's prompt count whether the steps' results reach the model (adapter/delivery.py).
        When they do not: tool results go in user messages from the next step on (`tool_results_switch`), or, where
        observations already go in user messages, the episode ends as the endpoint's failure (True)."""
        self._delivery.see(number, sent, call.prompt_tokens, call.upstream)
        why = self._delivery.verdict()
        if why is None:
            return False
        self._delivery.restart()
        if mode != "text" and transcript.tool_results == "tool_message":
            transcript.tool_results = "user_message"
            transcript.tool_results_switch = switch_user_messages(number, f"tool results did not reach the model: "
                                                                          f"{why}")
            return False
        transcript.stop_reason = "infrastructure"
        transcript.infrastructure_cause = NOT_DELIVERED_CAUSE
        transcript.infrastructure_error = (f"the observations sent in user messages did not reach the model: {why}"
                                           " (does the server cut prompts to a smaller context than it states?)")
        return True

    def _to_text_protocol(self, window: ContextWindow, transcript: AgentTranscript, number: int,
                          why: str) -> ToolMode:
        """Use the text protocol for the rest of the episode (auto mode only): the system prompt describes it and
        the tool schemas are no longer sent. The transcript says from which step, and why."""
        transcript.tool_mode = "text"
        transcript.tool_mode_switch = switch_text(number, why)
        transcript.system_prompt = system_prompt(text_protocol_mode=True, finish=self.finish)
        window.replace_system(transcript.system_prompt)
        window.overhead = 0
        return "text"

    def _refit_after_refusal(self, window: ContextWindow, transcript: AgentTranscript, refused: list[dict[str, Any]],
                             estimated: int, refusal: openai.BadRequestError) -> list[dict[str, Any]] | None:
        """After a context refusal of `refused`: learn what it says (a smaller context than planned becomes the
        episode's, `transcript.context_tokens`; the tokens it counted calibrate the scale) and the messages refitted
        to that; None when it taught nothing, nothing fits, or the refit is what was refused (the episode's context
        is exhausted)."""
        said = str(refusal)
        limit, requested = context_from_refusal(said), requested_in_refusal(said)
        planned = transcript.context_tokens or self.bounds.context_tokens
        learned = False
        if limit is not None and self.bounds.max_response_tokens < limit < planned:
            transcript.context_tokens = limit
            window.budget = limit - self._reply_tokens
            learned = True
        scale = window.scale
        if requested is not None:  # the request's own count (its reply room included, which only errs safe)
            window.calibrate(requested, estimated)
            transcript.token_scale = round(window.scale, 3)
            learned = learned or window.scale > scale
        refitted = window.fit() if learned else None
        return refitted if refitted is not None and refitted != refused else None

    async def _send_again(
        self, messages: Sequence[dict[str, Any]], mode: ToolMode, started: float, transcript: AgentTranscript,
    ) -> tuple[bytes, str, Mapping[str, str]] | AgentTranscript:
        """The one retry of a step's request (after a tool-mode fallback or a refit to the server's context): its
        reply, or the episode ended by what it ran into (a second refusal never retries again)."""
        try:
            return await self._bounded(messages, mode, started)
        except openai.BadRequestError as exc:
            if context_refusal(exc):
                return self._stop(transcript, "context_exhausted", f"the server refused the prompt: {exc}")
            return self._infrastructure(transcript, exc)
        except openai.APIError as exc:
            return self._infrastructure(transcript, exc)
        except RequestBound as bound:
            return self._bound_hit(transcript, bound)

    async def _bounded(
        self, messages: Sequence[dict[str, Any]], mode: ToolMode, started: float
    ) -> tuple[bytes, str, Mapping[str, str]]:
        """`_request` within the request timeout and what is left of the episode's wall clock (RequestBound says
        which one it ran into)."""
        while True:
            left = self.bounds.wall_clock_s - (time.monotonic() - started)
            limit = min(self.bounds.request_timeout_s, max(left, 0.0))
            try:
                return await asyncio.wait_for(self._request(messages, mode), timeout=limit)
            except TimeoutError:
                which: Literal["request_timeout", "wall_clock"] = (
                    "wall_clock" if left <= self.bounds.request_timeout_s else "request_timeout")
                began = self.stream_watch is not None and self.stream_watch.began
                if which == "wall_clock" or self._turn is None or not self._turn.after_timeout(limit,
                                                                                           stream_began=began):
                    raise RequestBound(which, limit) from None
            except openai.APIConnectionError as exc:
                # No connection (refused, reset, no such host) before any reply began: the fallback, when there
                # is one, answers from here on. A timeout, or a stream that began, is not this (above, adapter/stream).
                began = self.stream_watch is not None and self.stream_watch.began
                if (isinstance(exc, openai.APITimeoutError) or began or self._turn is None
                        or not self._turn.after_unreachable(connection_detail(exc))):
                    raise
                self._primary_unreachable = True
            except openai.RateLimitError as exc:
                # The serving protocol's own answer to a 429 (a wait, or the fallback); without it, the client's.
                if self._turn is None or not await self._turn.after_throttle(exc, left):
                    raise
            except openai.InternalServerError as exc:
                # A 5xx: asked again within the bounds as the client's own retries ask without the protocol.
                if self._turn is None or not await self._turn.after_server_error(exc.status_code, left):
                    raise
            except openai.BadRequestError as exc:
                # A server that streams but takes no stream_options (older servers): asked once more without it.
                if self._turn is None or self._usage_unasked or "stream_options" not in str(exc):
                    raise
                self._usage_unasked = True
                self._turn.stream_options_refused(str(exc))

    @staticmethod
    def _bound_hit(transcript: AgentTranscript, bound: RequestBound) -> AgentTranscript:
        if bound.which == "wall_clock":
            return ModelLoop._stop(transcript, "wall_clock",
                                   f"a model request was still waiting when the episode's wall clock ran out "
                                   f"({bound.limit_s:.1f} s left)")
        transcript = ModelLoop._infrastructure(transcript, bound)
        transcript.stop_detail = str(bound)
        return transcript

    @staticmethod
    def _stop(transcript: AgentTranscript, reason: StopReason, detail: str) -> AgentTranscript:
        transcript.stop_reason = reason
        transcript.stop_detail = clean_text(detail)[0][:2000]
        return transcript

    @staticmethod
    def _infrastructure(transcript: AgentTranscript, exc: BaseException | EndpointFault) -> AgentTranscript:
        transcript.stop_reason = "infrastructure"
        transcript.infrastructure_cause = infrastructure_cause(exc)
        said = str(exc) if isinstance(exc, EndpointFault) else f"{type(exc).__name__}: {exc}"
        transcript.infrastructure_error = clean_text(said)[0][:2000]  # an error may quote the endpoint's bytes
        return transcript
