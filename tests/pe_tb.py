"""cocotb testbench of fg_pe.v alone (run by tests/test_pe.py): K units write entries into the PE's
FIFOs as the issue units do (only with room, never two vectors ahead of the last drained one), and
the testbench drains each whole bank as the stage does; then every drained sum is checked against
the vector's entries, and the oldest vector must be finished first (docs/engine.md, "Processing
elements")."""

from __future__ import annotations

import json
import os
import random
from collections import Counter

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge
from tb_reset import reset

VALUE_W = 16
SUM_LATENCY = 2  # a drain read's sum comes two cycles later (fg_pe.v, two banks)
PIPELINE = 6  # cycles from an entry's write to its bank's `done`: FIFO, E1, E2, write, the ends' count, `done`


class Harness:
    """The PE with its units' writes and the stage's drain around it, one clock cycle at a time."""

    def __init__(self, dut, config: dict, rng: random.Random, stall: float):
        self.dut, self.rng, self.stall = dut, rng, stall
        self.units, self.local_w, self.addresses = config["K"], config["LOCAL_W"], config["ADDRESSES"]
        self.sum_w = config["SUM_W"]
        self.entry_w = self.local_w + VALUE_W
        self.queues: list[list[tuple[int, int, int]]] = [[] for _ in range(self.units)]  # (vector, local, x)
        self.drained_vectors = 0
        self.sums: list[list[int]] = []  # per drained vector, its sum at every local address
        self.done_at: dict[int, int] = {}  # vector: the cycle its bank was seen whole
        self.written_at: dict[int, int] = {}  # vector: the cycle its last entry was written
        self.cycle = 0
        self._drain: list[int] = []  # local addresses left to read of the bank being drained
        self._reading: list[tuple[int, int]] = []  # (cycle the sum is due, local address)
        self._current: list[int] = []  # the sums read so far of the bank being drained
        self._queued: Counter[int] = Counter()  # per vector, its entries not yet written
        self.held: set[int] = set()  # units that may not write yet

    def write(self, unit: int, vector: int, entries: list[tuple[int, int]]) -> None:
        """Queue a vector's entries (local, x != 0) at a unit, and its end entry."""
        self.queues[unit] += [(vector, local, x) for local, x in entries] + [(vector, 0, 0)]
        self._queued[vector] += len(entries) + 1

    async def run(self, vectors: int, cycles: int) -> None:
        """Cycles until `vectors` vectors are drained, at most `cycles` of them in all."""
        while self.drained_vectors < vectors:
            assert self.cycle < cycles, f"{self.drained_vectors} of {vectors} vectors drained in {cycles} cycles"
            await self.step()

    async def step(self) -> None:
        """One clock cycle: the drain reads, or hands back, the oldest bank once it is whole; each
        unit not `held` writes its next entry if it saw room."""
        dut = self.dut
        await FallingEdge(dut.clk)
        room, done = int(dut.in_room.value), int(dut.done.value)
        bank = self.drained_vectors % 2
        if done >> bank & 1 and self.drained_vectors not in self.done_at:
            self.done_at[self.drained_vectors] = self.cycle
            self._drain = list(range(self.addresses))
            self._current = [0] * self.addresses
        if self._reading and self._reading[0][0] == self.cycle:
            _, local = self._reading.pop(0)
            self._current[local] = signed(int(dut.sum.value), self.sum_w)
        drained = 0
        if self._drain:
            local = self._drain.pop(0)
            dut.drain_read.value, dut.drain_bank.value, dut.drain_addr.value = 1, bank, local
            self._reading.append((self.cycle + SUM_LATENCY, local))
        else:
            dut.drain_read.value = 0
            if self.drained_vectors in self.done_at and not self._reading:
                self.sums.append(self._current)
                drained = 1 << bank
                self.drained_vectors += 1
        dut.drained.value = drained
        entries, writes = 0, 0
        for unit, queue in enumerate(self.queues):
            if not queue or unit in self.held or not room >> unit & 1 or self.rng.random() < self.stall:
                continue
            if queue[0][0] >= self.drained_vectors + 2:  # its bank is not free yet
                continue
            vector, local, x = queue.pop(0)
            entries |= (local << VALUE_W | x) << (unit * self.entry_w)
            writes |= 1 << unit
            self._queued[vector] -= 1
            if self._queued[vector] == 0:
                self.written_at[vector] = self.cycle
        dut.in_entry.value, dut.in_write.value = entries, writes
        await RisingEdge(dut.clk)
        self.cycle += 1


async def start(dut) -> None:
    await reset(dut, ("in_write", "in_entry", "drained", "drain_read", "drain_bank", "drain_addr"))
    while not int(dut.ready.value):  # the banks are cleared one address a cycle
        await RisingEdge(dut.clk)


def expected_sums(entries: list[tuple[int, int]], addresses: int, sum_w: int) -> list[int]:
    sums = [0] * addresses
    for local, x in entries:
        sums[local] += x
    return [signed(s & ((1 << sum_w) - 1), sum_w) for s in sums]  # the sums wrap, which is exact


def nonzero_value(rng: random.Random) -> int:
    """A nonzero 16-bit activation, as its two's-complement bits."""
    return rng.randrange(1, 1 << VALUE_W)


def signed(bits: int, width: int) -> int:
    """The value of `width` two's-complement bits."""
    return bits - (1 << width) if bits >> (width - 1) else bits


@cocotb.test()
@cocotb.parametrize(stall=[0.3, 0.0])
async def pe_sums_every_vector(dut, stall: float):
    """Random vectors over K units, the writes stalling `stall` of the cycles: every bank drained
    holds exactly its vector's sums."""
    config = json.loads(os.environ["PE_TB_CONFIG"])
    rng = random.Random(f"{config['seed']} {stall}")
    await start(dut)
    harness = Harness(dut, config, rng, stall)
    vectors = []
    for v in range(config["vectors"]):
        whole = []
        for unit in range(config["K"]):
            count = rng.choice([0, 1, rng.randrange(2, 20), rng.randrange(20, 150)])
            entries = [(rng.randrange(config["ADDRESSES"]), nonzero_value(rng)) for _ in range(count)]
            harness.write(unit, v, entries)
            whole += [(local, signed(x, VALUE_W)) for local, x in entries]
        vectors.append(expected_sums(whole, config["ADDRESSES"], config["SUM_W"]))
    await harness.run(len(vectors), 20000)
    assert harness.sums == vectors


@cocotb.test()
async def pe_finishes_the_oldest_vector_first(dut):
    """Unit 0 runs a vector ahead: a short vector 0, then a long vector 1, an entry a cycle, which
    the PE takes as fast; the other units write their vector 0 while it does. Their entries must
    not wait behind unit 0's: the bank of vector 0 is whole as soon as they have passed the PE.
    (With the first FIFO always first, they waited for the end of unit 0's vector 1.)"""
    config = json.loads(os.environ["PE_TB_CONFIG"])
    units, addresses, sum_w = config["K"], config["ADDRESSES"], config["SUM_W"]
    rng = random.Random(config["seed"])
    await start(dut)
    harness = Harness(dut, config, rng, 0.0)

    def entries(count: int) -> list[tuple[int, int]]:
        return [(rng.randrange(addresses), nonzero_value(rng)) for _ in range(count)]

    vector0 = [entries(4)] + [entries(8) for _ in range(1, units)]
    vector1 = entries(200)
    harness.write(0, 0, vector0[0])
    harness.write(0, 1, vector1)
    for unit in range(1, units):
        harness.write(unit, 0, vector0[unit])
        harness.write(unit, 1, [])
    harness.held = set(range(1, units))
    while len(harness.queues[0]) > 180:  # unit 0 is well into its vector 1
        await harness.step()
    harness.held = set()
    await harness.run(2, 2000)
    waiting = 8 * (units - 1) + units  # the other units' entries and end entries of vector 0
    delay = harness.done_at[0] - harness.written_at[0]
    assert delay <= waiting + PIPELINE, (
        f"vector 0 whole {delay} cycles after its last entry, bound {waiting + PIPELINE}"
    )

    def sums(vector: list[tuple[int, int]]) -> list[int]:
        return expected_sums([(local, signed(x, VALUE_W)) for local, x in vector], addresses, sum_w)

    assert harness.sums == [sums([entry for unit in vector0 for entry in unit]), sums(vector1)]
