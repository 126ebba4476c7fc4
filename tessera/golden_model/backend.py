"""The ``model`` backend: runs a program on :class:`tessera.golden_model.Array` (registered on import)."""

from __future__ import annotations

from tessera.backends import BackendError, register
from tessera.spec.config import ArrayConfig
from tessera.spec.result import RunResult


@register("model")
def run_on_model(config: ArrayConfig, image, max_cycles: int, *, preload=(),
                 readback=()) -> tuple[RunResult, list[bytes]]:
    """Load ``image`` into every tile of a golden-model array, run it, read memory back.

    See :func:`tessera.backends.run_program_io` for the parameters.
    """
    try:  # imported late: the model is not needed for `tessera cc`
        from tessera.golden_model import Array
    except ImportError as e:
        raise BackendError(f"the golden model is not available ({e})") from None

    arr = Array(config)
    for seg in image.segments:
        if seg.data:
            arr.write_mem(None, seg.addr, bytes(seg.data))
    for tile, addr, data in preload:
        arr.write_mem(tile, addr, bytes(data))
    arr.start(entry=image.entry)
    result = arr.run(max_cycles)
    data = [bytes(arr.read_mem(tile, addr, n)) for tile, addr, n in readback]
    return result, data
