from tessera.spec.config import preset
from tessera.toolchain.exchange_scheduler import Transfer, schedule_exchange

cfg = preset("array16")
sched = schedule_exchange([
    Transfer(0, 0x100, [(1, 0x800)]),                 # unicast: tile 0 word 0x100 -> tile 1 0x800
    Transfer(2, 0x104, [(3, 0x800), (4, 0x800)]),     # multicast: sent once, two receivers
], cfg)
sched.programs        # per tile: list[tessera.spec.exchange.Step], END included
sched.encoded()       # per tile: bytes to copy to an 8-byte aligned address written to xprog
print(sched.summary())
sched.report()        # JSON-ready: slots, slot_bound, cycles, cycle_bound, bound_met, per-tile counts
