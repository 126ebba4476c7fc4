"""Compile C and assembly for Tessera with the ``ziglang`` wheel (clang + lld inside).

The fixed flags are the ones measured in TOOLCHAIN-NOTES §1: ``-target
riscv32-freestanding-none -mcpu=generic_rv32+m -O2 -ffreestanding -T link.ld`` (no
``-march``, no ``-nostdlib``, so compiler_rt provides 64-bit division), plus ``-g``: the
DWARF debug sections are not loaded (the image is the same), and fault reports use them to
name the function and ``file:line`` of a pc (:mod:`tessera.toolchain.debuginfo`). The
generated ``tessera.h`` is on the include path; ``crt0.S`` is linked first unless ``no_crt``.
After linking, the stack size per context (``TSR_SET_STACK_BYTES``) is checked.
Spec: docs/architecture.md section 11.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import TOOLCHAIN_DIR, ToolchainError
from .header import include_dir

__all__ = ["compile_program", "compiler_command", "CompileError", "BASE_FLAGS", "SOURCE_SUFFIXES"]

BASE_FLAGS = ("-target", "riscv32-freestanding-none", "-mcpu=generic_rv32+m", "-ffreestanding")
#: Debug info for source-level fault reports (not loaded into the SRAM).
DEBUG_FLAGS = ("-g",)
DEFAULT_OPT = "-O2"
#: File suffixes accepted as sources (C, preprocessed asm, plain asm).
SOURCE_SUFFIXES = (".c", ".S", ".s")


class CompileError(ToolchainError):
    """The compiler failed; ``str(err)`` is a one-line summary, ``output`` the compiler text."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


def compiler_command(sources, output, *, no_crt=False, opt=None, defines=(), include_dirs=(),
                     extra=()) -> list[str]:
    """The compiler command line (see :func:`compile_program` for the parameters)."""
    cmd = [sys.executable, "-m", "ziglang", "cc", *BASE_FLAGS, *DEBUG_FLAGS, opt or DEFAULT_OPT,
           "-I", str(include_dir())]
    for inc in include_dirs:
        cmd += ["-I", str(inc)]
    for d in defines:
        cmd.append(f"-D{d}")
    cmd += ["-T", str(TOOLCHAIN_DIR / "link.ld")]
    cmd += list(extra)
    if not no_crt:
        cmd.append(str(TOOLCHAIN_DIR / "crt0.S"))
    cmd += [str(s) for s in sources]
    cmd += ["-o", str(output)]
    return cmd


def compile_program(sources, output, *, no_crt=False, opt=None, defines=(), include_dirs=(),
                    extra=(), timeout=300) -> Path:
    """Compile and link ``sources`` into a Tessera ELF.

    Parameters
    ----------
    sources : sequence of str or path-like
        C (``.c``) and assembly (``.S``, ``.s``) files.
    output : str or path-like
        The ELF to write (its directory must exist).
    no_crt : bool
        Do not link ``crt0.S``: the program provides ``_start`` itself (put it in section
        ``.text.start`` so the linker script places it at address 0).
    opt : str, optional
        Optimisation flag such as ``"-O2"``, ``"-Os"``, ``"-O3"`` (default ``-O2``; ``-O0`` is
        accepted but pulls in UBSan unless ``-fno-sanitize=undefined`` is also given).
    defines : sequence of str
        Macro definitions ``NAME`` or ``NAME=VALUE`` (``-D``).
    include_dirs : sequence of path-like
        Extra include directories (``-I``).
    extra : sequence of str
        Further flags passed to ``zig cc`` verbatim (e.g. ``-Wl,--print-memory-usage``).
    timeout : float
        Seconds before the compiler is abandoned.

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    ToolchainError
        A source is missing or has an unknown suffix, or the output directory is missing.
    CompileError
        The compiler exited non-zero; ``output`` holds its stderr/stdout.
    tessera.toolchain.elf.StackSizeError
        The program sets a stack size per context (``TSR_SET_STACK_BYTES(n)``) below the
        minimum or not 16-byte aligned; the ELF is removed.
    """
    sources = [Path(s) for s in sources]
    if not sources:
        raise ToolchainError("no source files given")
    for s in sources:
        if not s.is_file():
            raise ToolchainError(f"source file not found: {s}")
        if s.suffix not in SOURCE_SUFFIXES:
            raise ToolchainError(
                f"unsupported source {s}: expected one of {', '.join(SOURCE_SUFFIXES)}")
    output = Path(output)
    if not output.parent.is_dir():
        raise ToolchainError(f"output directory does not exist: {output.parent}")
    if opt is not None and not (opt.startswith("-O") and len(opt) <= 4):
        raise ToolchainError(f"bad optimisation flag {opt!r}; use -O0/-O1/-O2/-O3/-Os/-Oz")
    cmd = compiler_command(sources, output, no_crt=no_crt, opt=opt, defines=defines,
                           include_dirs=include_dirs, extra=extra)
    env = dict(os.environ)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise CompileError(f"compiler timed out after {timeout} s") from None
    except OSError as e:  # pragma: no cover - python itself missing
        raise CompileError(f"cannot run the compiler: {e}") from None
    if proc.returncode != 0:
        text = (proc.stderr + proc.stdout).strip()
        names = " ".join(str(s) for s in sources)
        raise CompileError(f"compilation of {names} failed (zig cc exit {proc.returncode})", text)
    from .elf import load_elf, StackSizeError
    try:
        image = load_elf(output)
        names = " ".join(str(s) for s in sources)
        if "__stack_bytes" in image.symbols:
            from .elf import check_stack_bytes
            check_stack_bytes(image.stack_bytes, f"{names}: TSR_SET_STACK_BYTES")
    except StackSizeError:
        output.unlink(missing_ok=True)
        raise
    return output
