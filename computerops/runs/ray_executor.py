"""Running a run's episodes on Ray actors (`run --executor ray`): each worker holds what an episode needs and reuses
it across episodes; the driver hands out planned episodes and admits what comes back, once, into the one run
directory.

A worker (`EpisodeWorker`, one Ray actor) holds its own sites server over its own tenant registries, one Chromium
(adapter/browser.py), the model client and, for a scripted endpoint, its own scripted endpoint. It runs each episode
with the local executor's own code (`run_episode`) into a scratch run directory of its machine (a worker may be on
another machine than the run directory) and returns the episode's evidence files (name -> bytes) and its record.
The driver (`RayExecutor.run`) writes the files into the run directory, checks them against the record's hashes and
admits the record through `RunDirectory.admit` (append-only, fsync'd, locked): the evidence is the local executor's.

Before a worker runs anything it reports what it would run with (`WorkerIdentity`): the hashes of its code
(computerops/runs/provenance.py), of the run's task files as its own checkout has them, and the versions of Python,
Playwright, the OpenAI client and ComputerOps; one that differs from the driver's in any is refused by name
(`worker_refusal`), and one whose Chromium differs from the other workers' is refused after its start. Ray is
imported only here, and only when a run asks for it: the package imports without Ray (`pip install -e '.[ray]'`).

A worker lost mid-episode (its process killed, its node gone: Ray raises a RayActorError or WorkerCrashedError on the
pending call) returned nothing, so nothing of the episode was admitted: the driver records the loss in the attempt
(lost_worker.json: the worker, Ray's cause, when), sets the attempt apart (interrupted/<id>/attempt-N/, as a resume
does), logs the loss with Ray's cause in workers.jsonl (`WorkerEvent`),
starts a replacement worker in the background (the same setup and the same code check; logged when it has started or
could not) and runs the episode again on the next free worker, at most MAX_WORKER_LOSSES times per episode; then the
episode fails as any other. A replacement that cannot start stops the run at the next hand-out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from computerops.core.durable import scratch_writes
from computerops.core.lifeline import Lifeline
from computerops.runs.bundle import ADMITTED, EPISODES, STARTED, RunDirectory
from computerops.runs.provenance import CHECKOUT_ROOT, code_hashes, versions
from computerops.runs.records import EpisodeRecord, LostWorker, WorkerEvent

if TYPE_CHECKING:
    from adapter.transcript import Bounds
    from computerops.core.execution import Progress
    from computerops.runs.config import PlannedEpisode, RunConfig
    from computerops.runs.endpoint import ExtraSteps
    from computerops.runs.episode import EpisodeContext
    from tasks import LoadedTask

CPUS_PER_WORKER = 1.0
"""What each worker declares to Ray's scheduler: one browser and one episode at a time."""
MAX_WORKER_LOSSES = 2
"""How often one episode may lose its worker and run again on a replacement before it fails (and the run stops)."""
REPLACEMENT_START_S = 300.0
"""How long a worker may wait for a CPU of the cluster: at the run's start (then the run is refused) and in place of
a lost one (then the episode fails and the run stops); with no free CPU, Ray would keep it pending for ever
(tests/test_ray_node_loss.py)."""
STOP_S = 30.0
"""How long the driver waits for a worker to close its browser and servers at the run's end before it kills it."""
TEST_EPISODE_DELAY = "COMPUTEROPS_TEST_RAY_EPISODE_DELAY_S"
"""For tests only: seconds a worker waits before each episode (so a test can kill it mid-episode); it changes no
evidence, only measured times."""


class WorkerRefused(RuntimeError):
    """A Ray worker that may not run this run's episodes (its code differs from the driver's)."""


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker is given once, at its start: the run's plan and what the driver learned of the endpoint."""

    config: RunConfig
    tasks: list[LoadedTask]
    extra_steps: ExtraSteps | None
    base_url: str
    """The endpoint's base URL (unused for a scripted endpoint: each worker serves its own)."""
    api_key: str
    bounds: Bounds | None
    token_scale: float
    trace: bool


@dataclass(frozen=True)
class WorkerIdentity:
    """What a process would run episodes with: its code, the run's task files and the versions it runs on (Chromium
    apart: a worker reports it after its start)."""

    code_sha256: dict[str, str]
    task_sha256: dict[str, str]
    """Task instance id -> its hash as this checkout generates it (tasks/catalog.py `instance_sha256`); `missing`
    where there is none."""
    versions: dict[str, str | None]


def task_files(tasks: list[LoadedTask]) -> dict[str, str]:
    """Task id -> its file's path relative to the checkout, for the tasks of the checkout's catalog (a task file from
    elsewhere travels with the run's setup and is checked by the driver alone)."""
    files = {}
    for task in tasks:
        with contextlib.suppress(ValueError):
            files[task.id] = task.path.resolve().relative_to(CHECKOUT_ROOT).as_posix()
    return files


def identity(files: Mapping[str, str]) -> WorkerIdentity:
    """This process's identity for the task files `files` names (`task_files`): each instance's hash as this
    checkout generates it from its template file (the hash covers the template's files, version, seed and spec)."""
    from tasks.catalog import TaskFileError, load_template
    from tasks.templates import parse_instance_id
    task_sha256 = {}
    for task_id, relative in sorted(files.items()):
        try:
            template = load_template(CHECKOUT_ROOT / relative)
            parsed = parse_instance_id(task_id)
            task_sha256[task_id] = (template.sha256 if parsed is None
                                    else template.instance(parsed[1]).sha256)
        except (OSError, TaskFileError):
            task_sha256[task_id] = "missing"
    return WorkerIdentity(code_sha256=code_hashes(), task_sha256=task_sha256,
                          versions={k: v for k, v in versions(None).items() if k != "chromium"})


@dataclass(frozen=True)
class WorkerHello:
    """What a worker says of itself before it runs anything."""

    index: int
    host: str
    node: str
    pid: int
    identity: WorkerIdentity

    @property
    def name(self) -> str:
        return f"worker {self.index} ({self.host}, node {self.node[:12]}, pid {self.pid})"

    @property
    def node_name(self) -> str:
        return f"{self.host} (node {self.node})"


@dataclass(frozen=True)
class _Worker:
    """A started actor and what it said of itself."""

    actor: Any
    hello: WorkerHello


@dataclass(frozen=True)
class EpisodeResult:
    """A finished episode as a worker returns it: its record (JSON) and its evidence files (name -> bytes)."""

    record: str
    files: dict[str, bytes]


def worker_refusal(hello: WorkerHello, driver: WorkerIdentity) -> str | None:
    """Why a worker may not run the run's episodes: the packages of its code, the task files and the versions that
    differ from the driver's, each named with both values; None when it would run what the driver would."""
    def differences(there: Mapping[str, str | None], here: Mapping[str, str | None], width: int | None) -> list[str]:
        def shown(value: str | None) -> str:
            return "missing" if value is None else value[:width]
        return [f"{key} ({shown(there.get(key))} there, {shown(here.get(key))} here)"
                for key in sorted(set(here) | set(there)) if here.get(key) != there.get(key)]
    found = [(what, listed) for what, listed in (
        ("code", differences(hello.identity.code_sha256, driver.code_sha256, 12)),
        ("task files", differences(hello.identity.task_sha256, driver.task_sha256, 12)),
        ("versions", differences(hello.identity.versions, driver.versions, None))) if listed]
    if not found:
        return None
    shown = "; ".join(f"its {what} differ{'s' if what == 'code' else ''} from the driver's in {', '.join(listed)}"
                      for what, listed in found)
    return (f"{hello.name} refused: {shown}; install the driver's code and versions on that node (the same commit, "
            "the same `scripts/setup.sh`) and start the run again")


CONNECT_TIMEOUT_S = 5.0
"""How long the driver tries to reach a `--ray-address` of the form HOST:PORT before it refuses the run (Ray itself
retries an address that does not answer for minutes)."""


def unreachable_cluster(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why a `--ray-address` HOST:PORT cannot be joined (nothing accepts a connection there within `timeout_s`), else
    None; other forms (`auto`, `ray://...`) are left to Ray."""
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or not host or "/" in host:
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        return (f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one there with `ray start --head "
                f"--port {port}`, or drop --ray-address to start a local Ray instance")


def ray_failure(exc: BaseException) -> str:
    """Ray's start-up error in one line: its class and the last non-empty line of its message (Ray's messages run to
    several lines, the cause last)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__


def _start_reaper(session: str, ray_package: Path) -> tuple[Lifeline, subprocess.Popen[bytes]]:
    """The process that ends the local Ray instance `session` with this driver, however it ends
    (computerops/runs/ray_reaper.py), on this process's lifeline."""
    lifeline = Lifeline()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "computerops.runs.ray_reaper", session, str(os.getpid()), str(ray_package)],
            start_new_session=True,
            pass_fds=lifeline.pass_fds, env={**os.environ, **lifeline.env()}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL)
    except BaseException:
        lifeline.release()
        raise
    lifeline.started()
    return lifeline, process


def _cause(error: BaseException) -> str:
    """Ray's error as a worker event keeps it: its class and the first line of its message."""
    first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {first[:300]}" if first else type(error).__name__


def default_workers(cluster_cpus: float, planned: int) -> int:
    """Workers when `--workers` is not given: one per CPUS_PER_WORKER of the cluster's CPUs, at most one per planned
    episode, at least one."""
    return max(1, min(int(cluster_cpus // CPUS_PER_WORKER), planned))


def returned_files(bundle: RunDirectory, episode_id: str) -> dict[str, bytes]:
    """The evidence files of an episode folder (subfolders included), without its started and admitted markers, which
    the driver writes itself."""
    directory = bundle.episode_dir(episode_id)
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if name not in (STARTED, ADMITTED) and not name.endswith(".tmp"):
            files[name] = path.read_bytes()
    return files


class EpisodeWorker:
    """One Ray actor's state (the class is made an actor by `RayExecutor`): a sites server, browser and model client,
    set up once by `start` and reused by every episode `run` runs, one at a time."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._stack = AsyncExitStack()
        self._ctx: EpisodeContext | None = None
        self._tasks: dict[str, LoadedTask] = {}
        self._scratch: Path | None = None

    def hello(self, files: dict[str, str]) -> WorkerHello:
        """Who this worker is and what it would run with, for the run's task files `files` (`task_files`)."""
        import ray
        return WorkerHello(index=self.index, host=socket.gethostname(), node=ray.get_runtime_context().get_node_id(),
                           pid=os.getpid(), identity=identity(files))

    async def start(self, setup: WorkerSetup) -> str:
        """Set up what episodes need; returns the Chromium it launched, described as the manifest records it."""
        from playwright.async_api import async_playwright

        from adapter.browser import describe_chromium, launch_browser
        from adapter.modelclient import model_client
        from computerops.runs.endpoint import model_endpoint
        from computerops.runs.episode import EpisodeContext
        from computerops.runs.serving import serve_app
        from sites.kit.app import create_app
        from sites.kit.scratch import ScratchDirectory
        from sites.registry import tenant_registry
        stack = self._stack
        tenant_root = stack.enter_context(ScratchDirectory("tenants"))
        registry = tenant_registry(tenant_root / "run")
        stack.callback(registry.close)
        replay_registry = tenant_registry(tenant_root / "replay")
        stack.callback(replay_registry.close)
        self._scratch = stack.enter_context(ScratchDirectory("ray-episodes"))
        if setup.config.endpoint.kind == "scripted":
            base_url, api_key = await stack.enter_async_context(
                model_endpoint(setup.config.endpoint, setup.tasks, setup.extra_steps))
        else:
            base_url, api_key = setup.base_url, setup.api_key
        origin = await stack.enter_async_context(serve_app(create_app(registry)))
        playwright = await stack.enter_async_context(async_playwright())
        browser = await launch_browser(playwright)
        stack.push_async_callback(browser.close)
        bounds = setup.bounds or setup.config.bounds
        client = model_client(base_url, api_key, max_retries=2, timeout=bounds.request_timeout_s)
        stack.push_async_callback(client.close)
        self._tasks = {t.id: t for t in setup.tasks}
        self._ctx = EpisodeContext(config=setup.config, bundle=RunDirectory(self._scratch), registry=registry,
                                   replay_registry=replay_registry, browser=browser, origin=origin, client=client,
                                   trace=setup.trace, bounds=setup.bounds, token_scale=setup.token_scale)
        return describe_chromium(playwright, browser)

    async def run(self, task_id: str, planned: PlannedEpisode, wall_zero: float) -> EpisodeResult:
        """Run one episode into a fresh scratch run directory (named as the run, which long-running episodes use)
        and return its record and evidence; the scratch directory is removed."""
        from computerops.runs.episode import run_episode
        assert self._ctx is not None and self._scratch is not None, "start() first"
        if delay := float(os.environ.get(TEST_EPISODE_DELAY) or 0):
            await asyncio.sleep(delay)
        root = Path(tempfile.mkdtemp(dir=self._scratch)) / self._ctx.config.run_id
        try:
            (root / "episodes").mkdir(parents=True)
            (root / EPISODES).write_text("", encoding="utf-8")
            bundle = RunDirectory(root)
            # The run's timeline: the driver's wall clock at its zero, on this process's monotonic clock.
            clock_zero = time.monotonic() - (time.time() - wall_zero)
            ctx = dataclasses.replace(self._ctx, bundle=bundle, clock_zero=clock_zero)
            with scratch_writes():  # the driver writes the files again, fsync'd: here that was each file's cost twice
                record, _ = await run_episode(ctx, self._tasks[task_id], planned)
            return EpisodeResult(record=record.model_dump_json(), files=returned_files(bundle, planned.episode_id))
        finally:
            shutil.rmtree(root.parent, ignore_errors=True)

    async def stop(self) -> None:
        await self._stack.aclose()


class RayExecutor:
    """`workers` Ray actors for one run (None: `default_workers` of the cluster's CPUs), entered before the manifest is
    written (it records them) and left when the run stops. Joins the cluster at `address`, or starts a local Ray
    instance in this process when none is given and Ray is not running here yet (and shuts it down again). A worker
    lost mid-episode is replaced (`replaced` counts them) and its episode run again."""

    def __init__(self, setup: WorkerSetup, *, workers: int | None = None, address: str | None = None,
                 progress: Progress | None = None) -> None:
        self.setup = setup
        self.workers = workers
        self.address = address
        self.progress = progress or (lambda _: None)
        files = task_files(setup.tasks)
        self._files = files
        self._driver = dataclasses.replace(identity({}), task_sha256={  # the task files the run was planned with
            t.id: t.sha256 for t in setup.tasks if t.id in files})
        self.names: list[str] = []
        self.nodes: list[str] = []
        """The nodes the workers run on (host and node id), each once, in the order of the workers."""
        self.chromium: str | None = None
        self.replaced = 0
        self._started: list[_Worker] = []  # every worker that said hello, lost ones included
        self._actors: list[Any] = []  # every actor asked for, started or not (all are killed at the end)
        self._idle: asyncio.Queue[_Worker | None] = asyncio.Queue()  # None: a replacement failed (`_failure`)
        self._failure: RuntimeError | None = None
        self._replacing: set[asyncio.Future[None]] = set()  # replacements starting in the background
        self._started_ray = False
        self._reaper: tuple[Lifeline, subprocess.Popen[bytes]] | None = None  # with a local Ray instance of its own
        self._actor_class: Any = None

    async def __aenter__(self) -> RayExecutor:
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def _start(self) -> None:
        try:
            import ray
        except ImportError as exc:
            raise WorkerRefused("--executor ray needs Ray: pip install -e '.[ray]'") from exc
        if not ray.is_initialized():
            if self.address is None:  # one machine, no setup: workers inherit this process's environment
                path = os.environ.get("PYTHONPATH")  # the code this process runs, not another install of it
                # "local": a new instance of our own, never a cluster another process left running on this machine
                # (ray.init() alone joins the latest one started here, or RAY_ADDRESS's, even one since gone).
                try:
                    ray.init(address="local", include_dashboard=False, log_to_driver=False,
                             runtime_env={"env_vars": {"PYTHONPATH": path}} if path else None)
                except Exception as exc:  # Ray's own start-up failure: one line, not its traceback (issue 47)
                    raise WorkerRefused(f"--executor ray: Ray's local instance did not start "
                                        f"({ray_failure(exc)}); give --ray-address HOST:PORT of a running "
                                        f"cluster, or --executor local") from exc
                self._started_ray = True  # before the reaper: Ray is shut down even if the reaper does not start
                self._reaper = _start_reaper(ray.get_runtime_context().get_session_name(),
                                             Path(ray.__file__).resolve().parent)
            else:
                if (unreachable := unreachable_cluster(self.address)) is not None:
                    raise WorkerRefused(unreachable)
                try:
                    ray.init(address=self.address, log_to_driver=False)
                except Exception as exc:
                    raise WorkerRefused(f"--ray-address {self.address}: the Ray cluster could not be joined "
                                        f"({ray_failure(exc)})") from exc
                self._started_ray = True
        cpus = float(ray.cluster_resources().get("CPU", 0))  # type: ignore[no-untyped-call]
        if self.workers is None:
            self.workers = default_workers(cpus, len(self.setup.config.episodes))
            self.progress(f"ray: {self.workers} workers (the cluster has {cpus:g} CPUs, {CPUS_PER_WORKER:g} per "
                          f"worker; {len(self.setup.config.episodes)} planned episodes)")
        elif self.workers * CPUS_PER_WORKER > cpus:  # its actors could never all be placed: the run would wait forever
            raise WorkerRefused(f"--workers {self.workers} needs {self.workers * CPUS_PER_WORKER:g} CPUs (one per "
                                f"worker); the Ray cluster has {cpus:g}: give fewer workers or add nodes")
        self._actor_class = ray.remote(num_cpus=CPUS_PER_WORKER, max_restarts=0)(EpisodeWorker)
        actors = [self._actor_class.remote(index) for index in range(self.workers)]
        self._actors.extend(actors)
        await self._start_workers(actors, cpus)

    async def _start_workers(self, actors: list[Any], cpus: float) -> None:
        """Ask the new actors who they are, refuse any that would not run what the driver would, then start them:
        all at once at each step (each start, a sites server and Chromium, takes seconds, and they share nothing)."""
        try:
            hellos = await asyncio.wait_for(asyncio.gather(*(a.hello.remote(self._files) for a in actors)),
                                            REPLACEMENT_START_S)
        except TimeoutError:
            raise WorkerRefused(f"the {len(actors)} workers did not all start within {REPLACEMENT_START_S:g} s: the "
                                f"cluster's {cpus:g} CPUs are taken by other work; give fewer workers or add nodes"
                                ) from None
        self._started = [_Worker(actor, hello) for actor, hello in zip(actors, hellos, strict=True)]
        refusals = [r for w in self._started if (r := worker_refusal(w.hello, self._driver)) is not None]
        if refusals:
            raise WorkerRefused("; ".join(refusals))
        self.names = [w.hello.name for w in self._started]
        self.nodes = list(dict.fromkeys(w.hello.node_name for w in self._started))
        chromiums: list[str] = list(await asyncio.gather(*(w.actor.start.remote(self.setup) for w in self._started)))
        if len(set(chromiums)) > 1:
            raise WorkerRefused("the workers run different Chromium builds: " + "; ".join(
                f"{name}: {c}" for name, c in zip(self.names, chromiums, strict=True)))
        self.chromium = chromiums[0] if chromiums else None
        for w in self._started:
            self._idle.put_nowait(w)
        for name in self.names:
            self.progress(f"ray: {name} ready")

    @staticmethod
    def _withdraw(actor: Any) -> None:
        """Kill an actor lost or not started (one only cut off from the driver would run on, holding its CPU)."""
        import ray
        with contextlib.suppress(Exception):
            if ray.is_initialized():  # ray.kill would start a Ray instance where none runs
                ray.kill(actor)

    async def _replacement(self) -> _Worker:
        """A new worker in place of a lost one: the same setup, refused as at the start if its code, task files,
        versions or Chromium differ from the driver's. One lost before it starts (Ray may place it on the lost node,
        whose CPUs can count as free until the cluster's health check marks it dead) is started again; with no free
        CPU Ray would keep it pending for ever: after REPLACEMENT_START_S the episode fails (and the run stops)."""
        from ray.exceptions import RayActorError
        deadline = time.monotonic() + REPLACEMENT_START_S
        for attempt in range(1, MAX_WORKER_LOSSES + 2):
            index = len(self._actors)
            actor = self._actor_class.remote(index)
            self._actors.append(actor)
            try:
                hello: WorkerHello = await asyncio.wait_for(actor.hello.remote(self._files),
                                                            deadline - time.monotonic())
                break
            except TimeoutError:
                self._withdraw(actor)  # so it does not start later, unwatched
                raise RuntimeError(f"worker {index}, in place of a lost one, did not start within "
                                   f"{REPLACEMENT_START_S:g} s: no node of the cluster has a free CPU for it "
                                   f"({CPUS_PER_WORKER:g} each); add a node or run fewer workers, then "
                                   "`computerops run --resume`") from None
            except RayActorError as exc:
                self._withdraw(actor)
                if attempt > MAX_WORKER_LOSSES:
                    raise RuntimeError(f"worker {index}, in place of a lost one, was lost before it started "
                                       f"{attempt} times ({type(exc).__name__})") from exc
                self.progress(f"ray: worker {index}, in place of a lost one, lost before it started "
                              f"({type(exc).__name__}): starting another")
        worker = _Worker(actor, hello)
        self._started.append(worker)
        refusal = worker_refusal(worker.hello, self._driver)
        if refusal is not None:
            raise WorkerRefused(refusal)
        chromium: str = await actor.start.remote(self.setup)
        if chromium != self.chromium:
            raise WorkerRefused(f"{worker.hello.name} refused: it runs {chromium}, the run's workers {self.chromium}")
        self.replaced += 1
        return worker

    def _replace(self, bundle: RunDirectory, lost: WorkerHello, episode_id: str, loss: str) -> None:
        """Start a replacement for `lost` in the background (an episode waits for the next free worker, not for it):
        once it has started it joins the idle workers; if it cannot start, every later hand-out raises and the run
        stops (`run --resume` continues it). Both are logged in workers.jsonl."""
        async def replace() -> None:
            try:
                worker = await self._replacement()
            except Exception as error:  # named with the loss it followed
                bundle.log_worker_event(WorkerEvent(
                    event="replacement_failed", worker=f"replacement of worker {lost.index}",
                    cause=str(error), in_place_of=lost.name))
                self._failure = RuntimeError(f"{lost.name} lost ({loss}) on episode {episode_id}, and no worker "
                                             f"replaced it: {error}")
                self._idle.put_nowait(None)
                return
            bundle.log_worker_event(WorkerEvent(event="replaced", worker=worker.hello.name,
                                                in_place_of=lost.name))
            self.progress(f"ray: {worker.hello.name} ready, in place of worker {lost.index}")
            self._idle.put_nowait(worker)

        task = asyncio.ensure_future(replace())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _next_idle(self) -> _Worker:
        """The next free worker; raises once a replacement could not start (for every caller: the run stops)."""
        worker = await self._idle.get()
        if worker is None:
            self._idle.put_nowait(None)
            assert self._failure is not None
            raise self._failure
        return worker

    async def run(self, bundle: RunDirectory, task: LoadedTask, planned: PlannedEpisode,
                  wall_zero: float) -> EpisodeRecord:
        """Run one episode on the next free worker, write its evidence into `bundle`, check it against its record and
        admit the record (once, here); returns it. A worker lost on the way is replaced and the episode, its partial
        attempt set apart, runs again on the next free worker (at most MAX_WORKER_LOSSES times)."""
        from ray.exceptions import RayActorError, WorkerCrashedError
        losses = 0
        worker = await self._next_idle()
        while True:
            bundle.start_episode(planned)
            try:
                result: EpisodeResult = await worker.actor.run.remote(task.id, planned, wall_zero)
            except (RayActorError, WorkerCrashedError) as exc:  # the worker is gone, and nothing came back from it
                losses += 1
                lost = worker.hello
                # A lost node's worker is reported ActorUnavailableError ("may be available later"): ended here, so
                # one only cut off from the driver runs the episode no further, nor holds a CPU its replacement needs.
                self._withdraw(worker.actor)
                final = losses > MAX_WORKER_LOSSES
                # The attempt says why it stopped (moved with it; a final one is set apart by the resume).
                loss = LostWorker(episode_id=planned.episode_id, worker=lost.name, cause=_cause(exc))
                bundle.record_lost_worker(loss)
                attempt = None if final else bundle.set_apart(planned.episode_id).relative_to(bundle.root).as_posix()
                bundle.log_worker_event(WorkerEvent(
                    at=loss.at, event="lost", worker=lost.name, cause=loss.cause, episode_id=planned.episode_id,
                    set_apart=attempt))
                if final:
                    raise RuntimeError(f"{lost.name} lost ({type(exc).__name__}): episode {planned.episode_id} lost "
                                       f"its worker {losses} times, and runs no more") from exc
                self._replace(bundle, lost, planned.episode_id, type(exc).__name__)
                # The next free worker, not necessarily the replacement: one that is idle takes the episode at once.
                worker = await self._next_idle()
                self.progress(f"ray: worker {lost.index} lost ({type(exc).__name__}, pid {lost.pid}): episode "
                              f"{planned.episode_id} run again on worker {worker.hello.index}")
                continue
            except BaseException:
                self._idle.put_nowait(worker)
                raise
            self._idle.put_nowait(worker)
            break
        record = EpisodeRecord.model_validate_json(result.record)
        if record.episode_id != planned.episode_id:
            raise RuntimeError(f"a worker returned {record.episode_id} for {planned.episode_id}")
        for name, data in sorted(result.files.items()):
            bundle.write_evidence_bytes(planned.episode_id, name, data)
        problems = bundle.integrity_problems(record)
        if problems:
            raise RuntimeError(f"{planned.episode_id}: the evidence a worker returned does not match its record: "
                               + "; ".join(problems))
        bundle.admit(record)
        return record

    async def stop_replacing(self) -> None:
        """Cancel the replacements still starting (the run has ended: they are no longer needed, and nothing is logged
        after the run is sealed); their actors are killed with the rest at the exit."""
        for pending in list(self._replacing):
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending

    async def _stop(self) -> None:
        import ray
        await self.stop_replacing()
        for w in self._started:
            with contextlib.suppress(Exception):  # a worker already gone has nothing left to close
                await asyncio.wait_for(w.actor.stop.remote(), STOP_S)
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._started, self._actors = [], []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
        if self._reaper is not None:  # let it go: it ends what the shutdown left (nothing, as a rule) and exits
            lifeline, process = self._reaper
            self._reaper = None
            lifeline.release()
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, STOP_S)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self._stop()
