"""The test tiers, defined once (pyproject.toml registers the markers; tests/conftest.py applies them).

- pure and in-process tests carry no marker: `pytest -m "not browser and not real_model"` is the inner loop (4,772
  tests collected 2026-12-07; 4,002 ran in 12 min 11 s serially on the 2-core reference machine with nothing else
  running, measured 2026-12-06; README.md says the same; a session's last line, `session_figure`, gives that figure
  with the machine's load, so anyone can measure it again);
- `browser`: needs a real Chromium (given to every test that uses the `browser` fixture; a test that launches
  Chromium any other way must carry it: an unmarked test that tries is failed by tests/conftest.py when it runs, and
  tests/test_tier_markers.py finds one from its source, in whatever tier, before it runs);
- `postgres`: the run index's tests against a real PostgreSQL server the session starts in a temp dir
  (tests/postgres_server.py); skipped where its binaries are missing (`bash scripts/setup.sh --postgres` installs
  them; `scripts/test.sh`, CI, does). The same tests run on SQLite unmarked;
- `real_model`: a real llama.cpp server (llama-cpp-python's `llama_cpp.server`) serving a real instruct model
  (SmolLM2-135M-Instruct, Q4_1), started on loopback by tests/real_model_server.py (given to every test that uses
  its `real_model` fixture): an episode in each tool mode through real Chromium (auto mode's in the slow tier), the
  tool-results probe and the episode's own judgement of it, a primary stopped mid-run. Skipped where the package or
  the model is missing (`bash scripts/setup.sh --real-model` installs both; `scripts/test.sh`, CI, does, and fails
  the tier without them). The model computes on the CPU, so it takes minutes: `pytest -m "not browser and not
  real_model"` leaves it out of the inner loop;
- `slow`: the whole-catalog audit, the whole-catalog `tasks check` (every negative control of every task), the
  whole blind set, the accessibility check of every catalog page, 300 fresh seeds of every template, the fallible
  policy's oracle replies on every published instance and every command of README.md and docs/*.md that runs here
  (tests/doc_commands.yaml), only with `scripts/test.sh --slow`;
  every slow test is a browser test too (tests/conftest.py adds the marker; tests/test_tiers.py checks it); CI replays
  every task's control from the golden corpus, runs a sample of each site against every negative control, a
  sample of the audit's operators and of the blind set, and the fallible policy on each template's first instance
  and a seeded later one.

`scripts/test.sh` (CI) sets COMPUTEROPS_TESTS=full: property tests then run half their example counts (at least 20;
half the search, about 200 of CI's 3,400 test seconds, measured 2026-12-07: CI's 30-minute budget), `scripts/test.sh
--slow` their whole counts (COMPUTEROPS_EXAMPLES=whole as well); without either they run a twentieth (at least 20), so
the inner loop stays quick. Hypothesis draws new examples each run, so CI's searches add up over the merges.
"""

from __future__ import annotations

import os

FULL = os.environ.get("COMPUTEROPS_TESTS") == "full"
INNER_LOOP = "not browser and not real_model"
"""The inner loop's `-m` expression (README.md writes it; tests/test_tier_markers.py checks it does): it replaces
addopts' `-m 'not slow'`, and leaves the slow tier out because every slow test is a browser test."""


WHOLE_SEARCH = FULL and os.environ.get("COMPUTEROPS_EXAMPLES") == "whole"
"""Property tests run their whole example counts (the slow tier's `scripts/test.sh --slow`)."""


def examples(full: int) -> int:
    """Hypothesis examples for a property test whose whole search is `full` examples: all of them in the slow tier,
    half in CI, a twentieth in the inner loop (at least 20, never more than `full`)."""
    if WHOLE_SEARCH:
        return full
    return min(full, max(20, full // 2 if FULL else full // 20))


def cpu_figure(busy_s: float, all_s: float, cpus: int) -> str:
    """The line before the session's figure: the share of the machine's CPU time that was busy over the session (any
    process's, the tests' and whatever else ran). Well under 100% on CI's machine means the workers wait more than they
    compute, and a third would use the rest; near 100% means another would only queue."""
    share = busy_s / all_s if all_s > 0 else 0.0
    return f"CPU: {share:.0%} busy over the session on {cpus} CPUs ({busy_s:,.0f} of {all_s:,.0f} CPU seconds)"


def session_figure(tests: int, seconds: float, cpus: int, load: tuple[float, float], day: str) -> str:
    """The line a test session ends with (tests/conftest.py), from which README.md and this docstring take the inner
    loop's time: the tests run, the session's wall time, and the machine's CPUs and 1-minute load average at its start
    and end (on a shared machine the time says little without the load)."""
    minutes, rest = divmod(round(seconds), 60)
    return (f"session: {tests:,} tests in {minutes} min {rest} s on {cpus} CPUs, load average {load[0]:.1f} at the "
            f"start and {load[1]:.1f} at the end ({day} UTC)")
