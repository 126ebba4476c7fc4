"""The barrel-threaded RV32IM core of a Tessera tile (docs/rtl.md, "Core ↔ tile").

One unit per module: :mod:`.decoder`, :mod:`.alu`, :mod:`.mul`, :mod:`.divider`, :mod:`.lsu`,
:mod:`.csr`, :mod:`.dot4`, :mod:`.scheduler`, :mod:`.regfile`, composed in :mod:`.core`;
:mod:`.stub` is a core without logic for tests.
"""

from .core import Core, CoreSignature
from .stub import StubCore

__all__ = ["Core", "CoreSignature", "StubCore"]
