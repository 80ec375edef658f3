"""cocotb testbench of fg_merger.v alone (run by tests/test_merger.py): random vectors on S
sub-channels that stall at random, random room at the K units and a random `enable`; then the
rules of docs/engine.md, "Merger", checked on what the units received."""

from __future__ import annotations

import json
import os
import random
from collections import Counter

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge
from tb_reset import reset

VALUE_W = 16


class Source:
    """A sub-channel FIFO as the merger sees it: the head item and its valid, popped at a clock edge
    when in_pop is high (a pop of an empty FIFO does nothing)."""

    def __init__(self, items: list[int], stall: float, rng: random.Random):
        self.items, self.stall, self.rng = items, stall, rng
        self.valid = False

    def offer(self) -> None:
        self.valid = bool(self.items) and self.rng.random() >= self.stall

    def pop(self) -> None:
        if self.valid:
            self.items.pop(0)


@cocotb.test()
@cocotb.parametrize(stall=[0.3, 0.0])
async def merger_deals_by_the_rules(dut, stall: float):
    """With sub-channels, units and `enable` stalling `stall` of the cycles (half that for
    `enable`), or never."""
    config = json.loads(os.environ["MERGER_TB_CONFIG"])
    subs, units, idx_w = config["S"], config["K"], config["IDX_W"]
    item_w = 1 + idx_w + VALUE_W
    end = 1 << (item_w - 1)
    rng = random.Random(f"{config['seed']} {stall}")

    # Vectors: per vector and sub-channel, distinct (index, value) activations (a vector's index is
    # unique to it) and one end item; some sub-channels of some vectors carry only the end item,
    # every fourth vector only end items (an empty vector).
    vectors, counts = [], []
    streams = [[] for _ in range(subs)]
    for v in range(config["vectors"]):
        sent = []
        choices = [0] if v % 4 == 1 else [0, 1, 2, rng.randrange(3, 12), rng.randrange(12, 40)]
        counts.append([rng.choice(choices) for _ in range(subs)])
        for s, count in enumerate(counts[-1]):
            for i in range(count):
                item = ((v * 64 + s * 16 + i) % (1 << idx_w)) << VALUE_W | rng.randrange(1, 1 << VALUE_W)
                streams[s].append(item)
                sent.append(item)
            streams[s].append(end)
        vectors.append(Counter(sent))
    sources = [Source(stream, stall, rng) for stream in streams]

    await reset(dut, ("enable", "in_valid", "in_item", "out_room"))

    received = [[] for _ in range(units)]  # per unit, its items in order
    vector_ends = 0
    marked_empty = []  # per vector_in, whether it was marked empty
    last_room = last_enable = False  # seen at the cycle before: a write needs room then
    deals = tail = 0
    for cycle in range(config["cycles"]):
        for source in sources:
            source.offer()
        dut.in_valid.value = sum(int(source.valid) << s for s, source in enumerate(sources))
        dut.in_item.value = sum(
            (source.items[0] if source.valid else 0) << (s * item_w) for s, source in enumerate(sources)
        )
        room = rng.random() >= stall
        enable = rng.random() >= stall / 2
        dut.out_room.value = (1 << units) - 1 if room else rng.randrange(0, (1 << units) - 1)
        dut.enable.value = int(enable)

        await FallingEdge(dut.clk)
        out_valid = int(dut.out_valid.value)
        out_item = int(dut.out_item.value)
        if out_valid:
            assert last_room and last_enable, f"cycle {cycle}: a unit written without room or enable the cycle before"
            deals += 1
        values = 0
        for u in range(units):
            if out_valid >> u & 1:
                item = out_item >> (u * item_w) & ((1 << item_w) - 1)
                received[u].append(item)
                values += item != end
        assert values <= units
        if int(dut.vector_in.value):
            vector_ends += 1
            marked_empty.append(bool(int(dut.vector_empty.value)))
        pops = int(dut.in_pop.value)
        last_room, last_enable = room, enable

        await RisingEdge(dut.clk)
        for s, source in enumerate(sources):
            if pops >> s & 1:
                source.pop()
        if vector_ends == len(vectors):
            tail += 1
            if tail == 3:  # the last end items are written the cycle after the last vector_in
                break

    assert all(not source.items for source in sources), "the merger stopped taking items"
    assert vector_ends == len(vectors)
    empty = [not sent for sent in vectors]
    assert marked_empty == empty, "vector_empty marks exactly the vectors without activations"
    # With SKIP_EMPTY the units see only the vectors with activations.
    dealt = [sent for sent in vectors if sent or not config["SKIP_EMPTY"]]
    # Per unit, the vectors' activations, each vector closed by one end item.
    per_unit = []
    for u in range(units):
        chunks, current = [], []
        for item in received[u]:
            if item == end:
                chunks.append(current)
                current = []
            else:
                current.append(item)
        assert current == [] and len(chunks) == len(dealt), f"unit {u}: {len(chunks)} end items"
        per_unit.append(chunks)
    for v, sent in enumerate(dealt):
        shares = [len(per_unit[u][v]) for u in range(units)]
        assert sum((Counter(per_unit[u][v]) for u in range(units)), Counter()) == sent, f"vector {v}"
        assert max(shares) - min(shares) <= 1, f"vector {v}: shares {shares}"
    dut._log.info("%d vectors dealt in %d cycles (%d with writes)", len(vectors), cycle, deals)
    # Without stalls, a cycle takes K activations or every head that is one, which shortens the
    # fullest sub-channel (S <= K: always the latter). So a vector's activations take at most
    # n // K + max_s n_s cycles (max_s n_s when S <= K); then its last end item's cycle and the one
    # that deals the end items. Six more: the fetch and decide registers, the run's first cycle and
    # its three last.
    if stall == 0:
        bound = 6 + sum((sum(n) // units if subs > units else 0) + max(n) + 2 for n in counts)
        assert cycle <= bound, f"{cycle} cycles for {len(vectors)} vectors, bound {bound}"
