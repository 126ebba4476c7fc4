"""Build the graph's SPMD binary: the runtime plus every codelet used (docs/compiler.md).

One ELF, the same on every tile, compiled with :func:`tessera.toolchain.cc.compile_program`
(``crt0.S`` + ``runtime.c`` + codelet sources) and cached by content hash.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tessera.paths import cache_root
from tessera.toolchain import ToolchainError
from tessera.toolchain.cc import compile_program
from tessera.toolchain.elf import Image, load_elf
from tessera.toolchain.header import generate

from . import control
from .codelet import CODELET_DIR
from .errors import GraphError

__all__ = ["build_binary", "RUNTIME_SOURCE", "cache_dir"]

RUNTIME_SOURCE = CODELET_DIR / "runtime.c"


def cache_dir() -> Path:
    """Directory of cached graph binaries (``tessera.paths.cache_root() / "graph"``)."""
    root = cache_root()
    d = Path(root) / "graph"
    d.mkdir(parents=True, exist_ok=True)
    return d


def build_binary(codelets, *, opt: str = "-O2", stack_bytes: int = 1024,
                 defines=()) -> Image:
    """Compile the runtime and ``codelets`` into one ELF and load it.

    Parameters
    ----------
    codelets : iterable of Codelet
        Every codelet referenced by a vertex (kept by the linker with ``-u name``).
    opt : str
        Optimisation flag passed to the compiler.
    stack_bytes : int
        Stack bytes per context (linker symbol ``__stack_bytes``, read by crt0).
    defines : sequence of str
        Extra ``-D`` definitions (the compiler passes ``TSR_ENGINE_MACS=P`` of its array).

    Returns
    -------
    tessera.toolchain.elf.Image
        With ``symbols`` holding each codelet's address and ``__image_end``.

    Raises
    ------
    GraphError
        The compiler failed (message includes its output) or a codelet symbol is missing.
    """
    codelets = sorted({c.name: c for c in codelets}.values(), key=lambda c: c.name)
    sources = [RUNTIME_SOURCE] + sorted({Path(c.source) for c in codelets} - {RUNTIME_SOURCE})
    h = hashlib.sha256()
    for part in (opt, str(stack_bytes), *defines, generate(), control.generate_header(),
                 *(c.name for c in codelets)):
        h.update(part.encode() + b"\0")
    headers = sorted({h for s in sources for h in Path(s).parent.glob("*.h")})  # local includes
    for d in (*headers, *sources):
        h.update(str(d).encode() + b"\0" + Path(d).read_bytes() + b"\0")
    out = cache_dir() / f"graph-{h.hexdigest()[:20]}.elf"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        # zig's linker has no --defsym: define the absolute symbol in a generated file
        stack_src = out.with_suffix(f".{os.getpid()}.stack.c")
        stack_src.write_text(f'__asm__(".globl __stack_bytes\\n.equ __stack_bytes, {stack_bytes}\\n");\n')
        extra = [f"-Wl,-u,{c.name}" for c in codelets]
        try:
            # exchange programs come from the compiler for the array's L: no latency record
            compile_program([*sources, stack_src], tmp, opt=opt, include_dirs=[control.include_dir(), CODELET_DIR],
                            defines=["TSR_XLATENCY_NOTE=0", *defines], extra=extra)
        except ToolchainError as e:
            detail = getattr(e, "output", "")
            raise GraphError(f"building the graph binary failed: {e}\n{detail}") from None
        finally:
            stack_src.unlink(missing_ok=True)
        os.replace(tmp, out)
    image = load_elf(out)
    missing = [c.name for c in codelets if c.name not in image.symbols]
    if missing:
        raise GraphError(f"codelet function(s) {missing} not found in the compiled binary; "
                         "check the function names in the C sources")
    return image
