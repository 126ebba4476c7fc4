"""Backend registry: run a loaded program on the golden model, the RTL, ...

A backend is a function registered under a name::

    def run(config, image, max_cycles, *, preload=(), readback=()) -> tuple[RunResult, list[bytes]]

``image`` is any object with ``entry`` (int) and ``segments`` (iterable of objects with
``addr`` and ``data``), e.g. :class:`toolchain.elf.Image`. The backend writes every segment
into every tile (SPMD), then the ``preload`` writes ``(tile, addr, data)``, starts all
contexts at ``image.entry``, runs for at most ``max_cycles`` and returns the
:class:`tessera.result.RunResult` plus the bytes of each ``readback`` request
``(tile, addr, nbytes)`` read after the run.

The golden model backend (``"model"``) is registered here lazily; the RTL engineer registers
``"rtl"`` with :func:`register` (e.g. from ``tb/``) — :data:`KNOWN_BACKENDS` lists the names the
CLI accepts so that ``--backend rtl`` gives a clear "not available" error until then.
"""

from __future__ import annotations

import importlib
from typing import Callable

from .config import ArrayConfig
from .result import RunResult

__all__ = ["register", "available", "get", "run_program", "run_program_io", "BackendError",
           "KNOWN_BACKENDS"]

#: Backend names the CLI offers, whether or not they are registered yet.
KNOWN_BACKENDS = ("model", "rtl", "both")  # both: model + rtl, compared (tb/backend.py)

_REGISTRY: dict[str, Callable] = {}
#: Modules imported on first use of a backend name; importing them must call :func:`register`.
_PROVIDERS = {"model": "tessera.backends_model", "rtl": "tb.backend", "both": "tb.backend"}


class BackendError(Exception):
    """A backend is unknown or cannot be used here (one-line message, CLI exit 2)."""


def register(name: str, fn: Callable | None = None):
    """Register ``fn`` as backend ``name`` (usable as a decorator: ``@register("rtl")``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"backend name must be a non-empty str, not {name!r}")

    def deco(f):
        _REGISTRY[name] = f
        return f
    return deco if fn is None else deco(fn)


def get(name: str) -> Callable:
    """The run function of backend ``name``, importing its provider module if needed.

    Raises
    ------
    BackendError
        If no backend of that name is registered (after trying its provider module).
    """
    if name not in _REGISTRY and name in _PROVIDERS:
        try:
            importlib.import_module(_PROVIDERS[name])
        except Exception as e:  # missing module, missing simulator, broken install
            raise BackendError(
                f"backend {name!r} is not available ({_PROVIDERS[name]}: {e})") from None
    if name not in _REGISTRY:
        known = ", ".join(sorted(set(_REGISTRY) | set(KNOWN_BACKENDS)))
        if name in KNOWN_BACKENDS:
            raise BackendError(f"backend {name!r} is not available yet (not registered); "
                               f"try --backend model")
        raise BackendError(f"unknown backend {name!r}; choose one of {known}")
    return _REGISTRY[name]


def available() -> list[str]:
    """Names of the backends registered so far (providers not yet imported are not listed)."""
    return sorted(_REGISTRY)


def run_program_io(backend: str, config: ArrayConfig, image, max_cycles: int, *,
                   preload=(), readback=()) -> tuple[RunResult, list[bytes]]:
    """Run ``image`` SPMD on every tile of ``config`` with backend ``backend``.

    Parameters
    ----------
    backend : str
        A registered backend name (``"model"``, ``"rtl"`` once registered).
    config : ArrayConfig
    image : toolchain.elf.Image or compatible
        Needs ``entry`` and ``segments`` (``addr``, ``data``).
    max_cycles : int
        Cycle limit (≥ 1); the run ends with ``status = timeout`` after that many cycles.
    preload : iterable of (tile, addr, bytes)
        Per-tile writes done after loading the image and before the start.
    readback : iterable of (tile, addr, nbytes)
        Memory read after the run.

    Returns
    -------
    (RunResult, list of bytes)

    Raises
    ------
    BackendError
        Unknown or unavailable backend.
    ValueError
        ``max_cycles`` not a positive int.
    """
    if not isinstance(max_cycles, int) or isinstance(max_cycles, bool) or max_cycles < 1:
        raise ValueError(f"max_cycles must be a positive int, not {max_cycles!r}")
    fn = get(backend)
    result, data = fn(config, image, max_cycles, preload=list(preload), readback=list(readback))
    result.backend = backend
    return result, data


def run_program(backend: str, config: ArrayConfig, image, max_cycles: int, *,
                preload=()) -> RunResult:
    """Like :func:`run_program_io` without read-back; returns only the :class:`RunResult`."""
    return run_program_io(backend, config, image, max_cycles, preload=preload)[0]
