"""The bounded model loop: observe, ask the model, act, until done or a bound ends the episode.

Every bound that can end an episode is recorded as the stop reason. Bad model output is
rejected with a reason the model sees, recorded, and counted against the action budget.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import openai
from pydantic import BaseModel, ConfigDict, Field

from adapter.actions import (
    Action,
    Done,
    Rejection,
    action_to_arguments,
    parse_action,
    parse_text_action,
    tool_schemas,
)
from adapter.context import ContextWindow, estimate_tokens
from adapter.observation import Observation
from adapter.prompts import first_message, result_message, result_ok, result_rejected, system_prompt

StopReason = Literal["finish", "budget_exhausted", "context_exhausted", "wall_clock", "infrastructure"]
ToolMode = Literal["auto", "native", "text"]


class Bounds(BaseModel):
    """The limits of one episode, recorded in the run config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action_budget: int = Field(default=32, ge=1)
    """Model replies allowed, counting rejected ones and the final done."""
    max_response_tokens: int = Field(default=180, ge=1)
    context_tokens: int = Field(default=8192, ge=256)
    temperature: float = 0.0
    seed: int | None = 42
    """Requested sampling seed; whether the server honours it is not verified."""
    wall_clock_s: float = Field(default=600.0, gt=0)
    tool_mode: ToolMode = "auto"
    observation_chars: int = Field(default=6000, ge=500)


class ActionOutcomeLike(Protocol):
    @property
    def ok(self) -> bool: ...
    @property
    def rejection(self) -> Rejection | None: ...
    @property
    def note(self) -> str: ...


class Environment(Protocol):
    """What the loop needs of a page: observe it, act on it (the browser driver is one)."""

    async def observe(self) -> Observation: ...

    async def act(self, action: Action, number: int) -> ActionOutcomeLike: ...


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: str


class ModelCall(BaseModel):
    """What the endpoint returned for one request, as observed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_s: float
    model: str | None
    system_fingerprint: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    content: str | None
    tool_calls: list[ToolCall]
    prompt_tokens_estimated: int


class Step(BaseModel):
    """One model reply and what became of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    call: ModelCall
    action: dict[str, Any] | None
    rejection: Rejection | None
    note: str
    observation: str | None
    """The observation after the step (None after done)."""


class AgentTranscript(BaseModel):
    """The whole conversation of an episode, as recorded evidence."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str
    instruction: str
    tool_mode: ToolMode
    first_observation: str
    steps: list[Step] = Field(default_factory=list)
    finish: Done | None = None
    stop_reason: StopReason | None = None
    infrastructure_error: str | None = None

    @property
    def rejected_actions(self) -> int:
        return sum(1 for s in self.steps if s.rejection is not None)


def _observed(response: Any, latency: float, estimated: int) -> ModelCall:
    choice = response.choices[0] if response.choices else None
    message = choice.message if choice else None
    calls = [
        ToolCall(name=tc.function.name, arguments=tc.function.arguments or "")
        for tc in (message.tool_calls or []) if getattr(tc, "function", None) is not None
    ] if message else []
    usage = response.usage
    return ModelCall(
        latency_s=round(latency, 4), model=response.model, system_fingerprint=response.system_fingerprint,
        finish_reason=choice.finish_reason if choice else None,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        content=message.content if message else None, tool_calls=calls, prompt_tokens_estimated=estimated,
    )


def _interpret(call: ModelCall, mode: ToolMode) -> Action | Rejection:
    if call.tool_calls:
        first = call.tool_calls[0]
        return parse_action(first.name, first.arguments)
    if mode == "native":
        return Rejection(cause="no_action", reason="No tool call was made. Call exactly one of the tools.")
    return parse_text_action(call.content)


class ModelLoop:
    """Drives one episode: `await ModelLoop(...).run(env, instruction)`."""

    def __init__(self, client: openai.AsyncOpenAI, model: str, bounds: Bounds, *, budget: int | None = None):
        self.client = client
        self.model = model
        self.bounds = bounds
        self.budget = budget or bounds.action_budget

    async def _request(self, messages: Sequence[dict[str, Any]], mode: ToolMode) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": list(messages), "max_tokens": self.bounds.max_response_tokens,
            "temperature": self.bounds.temperature,
        }
        if self.bounds.seed is not None:
            kwargs["seed"] = self.bounds.seed
        if mode != "text":
            kwargs["tools"] = tool_schemas()
        return await self.client.chat.completions.create(**kwargs)

    async def run(self, env: Environment, instruction: str) -> AgentTranscript:
        mode = self.bounds.tool_mode
        first = await env.observe()
        transcript = AgentTranscript(
            system_prompt=system_prompt(text_protocol_mode=mode == "text"), instruction=instruction,
            tool_mode=mode, first_observation=first.text,
        )
        window = ContextWindow(self.bounds.context_tokens - self.bounds.max_response_tokens)
        window.add({"role": "system", "content": transcript.system_prompt})
        window.add({"role": "user", "content": first_message(instruction, first.text)}, observation=first.text)
        started = time.monotonic()
        for number in range(1, self.budget + 1):
            if time.monotonic() - started > self.bounds.wall_clock_s:
                transcript.stop_reason = "wall_clock"
                return transcript
            messages = window.fit()
            if messages is None:
                transcript.stop_reason = "context_exhausted"
                return transcript
            estimated = sum(estimate_tokens(json.dumps(m)) for m in messages)
            began = time.monotonic()
            try:
                response = await self._request(messages, mode)
            except openai.BadRequestError as exc:
                if mode == "auto" and "tool" in str(exc).lower():
                    # A server without tool support: fall back to the text protocol for the episode.
                    mode = transcript.tool_mode = "text"
                    window.replace_system(system_prompt(text_protocol_mode=True))
                    messages = window.fit() or messages
                    try:
                        response = await self._request(messages, mode)
                    except openai.APIError as retry_exc:
                        return self._infrastructure(transcript, retry_exc)
                else:
                    return self._infrastructure(transcript, exc)
            except openai.APIError as exc:
                return self._infrastructure(transcript, exc)
            call = _observed(response, time.monotonic() - began, estimated)
            decided = _interpret(call, mode)
            assistant: dict[str, Any] = {"role": "assistant", "content": call.content}
            if call.tool_calls:
                assistant["tool_calls"] = [{
                    "id": tc.id, "type": "function",
                    "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                } for tc in response.choices[0].message.tool_calls[:1]]
            window.add(assistant)
            if isinstance(decided, Done):
                transcript.steps.append(Step(number=number, call=call, action=decided.model_dump(),
                                             rejection=None, note="finished", observation=None))
                transcript.finish = decided
                transcript.stop_reason = "finish"
                return transcript
            if isinstance(decided, Rejection):
                rejection: Rejection | None = decided
                note = ""
            else:
                outcome = await env.act(decided, number)
                rejection, note = outcome.rejection, outcome.note
            observation = await env.observe()
            result = result_ok(note) if rejection is None else result_rejected(rejection.cause, rejection.reason)
            content = result_message(result, observation.text)
            if call.tool_calls:
                tool_call_id = assistant["tool_calls"][0]["id"]
                window.add({"role": "tool", "tool_call_id": tool_call_id, "content": content},
                           observation=observation.text)
            else:
                window.add({"role": "user", "content": content}, observation=observation.text)
            transcript.steps.append(Step(
                number=number, call=call,
                action=None if isinstance(decided, Rejection) else {"action": decided.action,
                                                                    **action_to_arguments(decided)},
                rejection=rejection, note=note, observation=observation.text,
            ))
        transcript.stop_reason = "budget_exhausted"
        return transcript

    @staticmethod
    def _infrastructure(transcript: AgentTranscript, exc: Exception) -> AgentTranscript:
        transcript.stop_reason = "infrastructure"
        transcript.infrastructure_error = f"{type(exc).__name__}: {exc}"
        return transcript
