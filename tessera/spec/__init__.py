"""The contract in Python: what every other part of Tessera imports (docs/architecture.md).

Standard library only (``tests/test_layers.py`` checks it), so that the RTL, the golden
model, the testbenches and the toolchain can all stand on it:

- :mod:`tessera.spec.config` — :class:`ArrayConfig` and the presets (§1);
- :mod:`tessera.spec.isa` — instruction encodings, custom instructions, division turns (§3, §4);
- :mod:`tessera.spec.csr` — CSR numbers (§3.2);
- :mod:`tessera.spec.faults` — fault causes (§7);
- :mod:`tessera.spec.exchange` — the exchange-program step format (§6);
- :mod:`tessera.spec.hostmap` — the host memory map (§9);
- :mod:`tessera.spec.result` — the run result and its JSON, both directions (§10).
"""
