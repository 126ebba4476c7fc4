"""Tessera toolchain: ``tessera.h`` generator, crt0/linker script, C compiler driver, ELF loader.

Modules
-------
header
    Generates ``tessera.h`` from :mod:`tessera.spec.isa`, :mod:`tessera.spec.csr` and
    :mod:`tessera.spec.exchange` (docs/architecture.md sections 3 and 6).
cc
    Compiles C and assembly to a Tessera ELF with the ``ziglang`` wheel.
elf
    Loads such an ELF (pyelftools) and checks that it fits a tile's SRAM.
run
    Loads a program into every tile and runs it on a backend (``tessera exec``).
demo
    The ``tessera demo`` SPMD vector sum.
"""

from pathlib import Path

#: Directory holding ``crt0.S``, ``link.ld`` and the example programs shipped with the package.
TOOLCHAIN_DIR = Path(__file__).resolve().parent


class ToolchainError(Exception):
    """A user-facing toolchain error (bad input file, compile failure, program too big).

    The CLI prints ``str(err)`` on one line (plus compiler output where relevant) and exits 2.
    """
