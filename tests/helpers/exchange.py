"""Exchange-scheduler test helpers: transfer lists with fresh, non-overlapping words."""

from tessera.toolchain.exchange_scheduler import Transfer

__all__ = ["make_transfers", "random_unicast"]


def make_transfers(pairs, cfg, src_base=0):
    """Give each (src, [dst tiles]) word a fresh source word and fresh destination words.

    Sources live in the lower half of the SRAM (from ``src_base``), destinations in the upper
    half, so no word is both read and written.
    """
    half = cfg.sram_bytes // 2
    nsrc = [0] * cfg.tiles
    ndst = [0] * cfg.tiles
    out = []
    for src, dsts in pairs:
        sa = src_base + 4 * nsrc[src]
        nsrc[src] += 1
        assert sa < half
        dl = []
        for d in dsts:
            dl.append((d, half + 4 * ndst[d]))
            ndst[d] += 1
        out.append(Transfer(src, sa, dl))
    return out


def random_unicast(rng, n, m, hot_src=None, hot_dst=None, p_hot=0.0):
    pairs = []
    for _ in range(m):
        s = hot_src if hot_src is not None and rng.random() < p_hot else rng.randrange(n)
        if hot_dst is not None and hot_dst != s and rng.random() < p_hot:
            d = hot_dst
        else:
            d = rng.randrange(n - 1)
            d += d >= s
        pairs.append((s, [d]))
    return pairs
