"""Tessera: an open, IPU-style AI processor (spec, configuration and CLI).

The ``tessera`` package holds what every other part of the project imports:
the array configuration (:mod:`tessera.config`), instruction encodings
(:mod:`tessera.isa`), CSR numbers (:mod:`tessera.csr`), fault causes
(:mod:`tessera.faults`), the exchange-program format (:mod:`tessera.exchange`),
the host memory map (:mod:`tessera.hostmap`) and the run-result format
(:mod:`tessera.result`).  ``docs/architecture.md`` is the contract these
modules implement.
"""

__version__ = "0.1.0"
