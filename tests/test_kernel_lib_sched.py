"""Exchange scheduler on the kernel library's patterns: the bit-sliced multicast split search
(tessera.toolchain.exchange_scheduler._best_slot) against a brute-force loop, and the 128x128x128
matmul's all-to-all multicast scheduled quickly with the bound met."""

import random

import pytest

from tessera.spec.config import preset
from tessera.toolchain.exchange_scheduler import Transfer, _best_slot, schedule_exchange


def _brute(avail, busy_rx):
    best, cnt = -1, 0
    for c in range(max(avail.bit_length(), 1)):
        if avail >> c & 1:
            k = sum(1 for b in busy_rx if not b >> c & 1)
            if k > cnt:
                best, cnt = c, k
    return best


@pytest.mark.parametrize("seed", range(40))
def test_best_slot_matches_brute_force(seed):
    rng = random.Random(seed)
    width = rng.choice([1, 5, 64, 300])
    avail = rng.getrandbits(width) if seed % 7 else 0
    busy = [rng.getrandbits(width) | (rng.getrandbits(width) if seed % 3 else 0)
            for _ in range(rng.randint(0, 20))]
    assert _best_slot(avail, busy) == _brute(avail, busy)


def test_best_slot_by_hand():
    # slots 0..3 available; receivers busy: r0 at {0,1}, r1 at {0}, r2 at {0,2}
    # free counts: slot 0: 0, slot 1: 2, slot 2: 2, slot 3: 3 -> 3
    assert _best_slot(0b1111, [0b0011, 0b0001, 0b0101]) == 3
    assert _best_slot(0b0111, [0b0011, 0b0001, 0b0101]) == 1   # tie 1/2 -> lowest
    assert _best_slot(0b0001, [0b0011, 0b0001, 0b0101]) == -1  # nobody free at slot 0
    assert _best_slot(0b0110, []) == -1


def test_all_to_all_multicast_fast_and_optimal():
    # the 128x128x128 matmul's B^T broadcast on 16 tiles: every tile owns 256 words and
    # multicasts each to the 15 other tiles; bound = 15 * 256 = 3840 received words per tile
    cfg = preset("array16")
    n, per = cfg.tiles, 256
    tr = [Transfer(t, 4 * i, tuple((d, 4096 + 4 * (t * per + i)) for d in range(n) if d != t))
          for t in range(n) for i in range(per)]
    s = schedule_exchange(tr, cfg)
    assert s.slot_bound == 15 * per
    assert s.bound_met and s.slots == s.slot_bound
    assert s.cycles == 15 * per + cfg.exchange_latency + 1
    # every destination gets its word exactly once, each tile sends/receives <= 1 per slot
    got = {}
    per_slot_tx, per_slot_rx = set(), set()
    for x in s.sends:
        assert (x.slot, x.src_tile) not in per_slot_tx
        per_slot_tx.add((x.slot, x.src_tile))
        for d, a in x.dsts:
            assert (x.slot, d) not in per_slot_rx
            per_slot_rx.add((x.slot, d))
            assert (d, a) not in got
            got[(d, a)] = (x.src_tile, x.src_addr)
    assert len(got) == n * per * (n - 1)
    for t in range(n):
        for i in range(per):
            for d in range(n):
                if d != t:
                    assert got[(d, 4096 + 4 * (t * per + i))] == (t, 4 * i)
