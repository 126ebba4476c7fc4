"""Tessera: an open, IPU-style AI processor (spec, configuration and CLI).

The ``tessera`` package holds what every other part of the project imports:
the array configuration (:mod:`tessera.spec.config`), instruction encodings
(:mod:`tessera.spec.isa`), CSR numbers (:mod:`tessera.spec.csr`), fault causes
(:mod:`tessera.spec.faults`), the exchange-program format (:mod:`tessera.spec.exchange`),
the host memory map (:mod:`tessera.spec.hostmap`) and the run-result format
(:mod:`tessera.spec.result`).  ``docs/architecture.md`` is the contract these
modules implement.
"""

__version__ = "0.1.0"
