"""Backend registry: run a loaded program on the golden model, the RTL, ...

A backend is a function registered under a name::

    def run(config, image, max_cycles, *, preload=(), readback=()) -> tuple[RunResult, list[bytes]]

``image`` is any object with ``entry`` (int) and ``segments`` (iterable of objects with
``addr`` and ``data``), e.g. :class:`tessera.toolchain.elf.Image`. The backend writes every segment
into every tile (SPMD), then the ``preload`` writes ``(tile, addr, data)``, starts all
contexts at ``image.entry``, runs for at most ``max_cycles`` and returns the
:class:`tessera.spec.result.RunResult` plus the bytes of each ``readback`` request
``(tile, addr, nbytes)`` read after the run.

Providers are found through the ``tessera.backends`` entry-point group of the installed
distributions (``pyproject.toml``: ``model`` → :mod:`tessera.golden_model.backend`, ``rtl`` and
``both`` → :mod:`tessera.tb.backend`), so this registry names no layer above it; a provider
module is imported on first use of its name and calls :func:`register` on import. Another
package can add a backend the same way. :data:`KNOWN_BACKENDS` lists the names the CLI offers,
so that ``--backend rtl`` gives a clear "not available" error where no provider is installed.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Callable

from .spec.config import ArrayConfig
from .spec.result import RunResult

__all__ = ["register", "available", "get", "run_program", "run_program_io", "BackendError",
           "KNOWN_BACKENDS"]

#: Backend names the CLI offers, whether or not they are registered yet.
KNOWN_BACKENDS = ("model", "rtl", "both")  # both: model + rtl, compared (tessera/tb/backend.py)

_REGISTRY: dict[str, Callable] = {}
#: Entry-point group whose entries name provider modules; importing one must call :func:`register`.
ENTRY_POINT_GROUP = "tessera.backends"


def _provider(name: str) -> str | None:
    """The provider module of backend ``name`` from the installed entry points, or None."""
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return ep.module
    return None


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
    provider = _provider(name) if name not in _REGISTRY else None
    if provider is not None:
        try:
            importlib.import_module(provider)
        except Exception as e:  # missing module, missing simulator, broken install
            raise BackendError(
                f"backend {name!r} is not available ({provider}: {e})") from None
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
    image : tessera.toolchain.elf.Image or compatible
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
