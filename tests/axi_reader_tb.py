"""cocotb testbench of fg_axi_reader.v alone (run by tests/test_axi_reader.py): random reads, some
ending just past a 4 KB page or longer than 256 beats, on an AR channel and a memory that stall at
random. Checked: the bursts cover every read exactly and in order, each as long as the AXI rules
allow (at most 256 beats, not across 4 KB), at most MAX_BURSTS are in flight, a read is taken only
when offered, and `idle` rises once everything is read."""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge
from tb_reset import reset

PAGE = 4096  # bytes an AXI burst may not cross
MAX_LEN = 256  # beats of an INCR burst


def reads(rng: random.Random, count: int, beat_bytes: int) -> list[tuple[int, int]]:
    """(byte address, beats): beat-aligned anywhere in a 64-bit space, or a few beats before a
    page's end; one beat, a few, about a page's worth, or more than one burst can hold."""
    page_beats = PAGE // beat_bytes
    found = []
    for _ in range(count):
        beats = rng.choice(
            [1, rng.randrange(2, 9), rng.randrange(page_beats - 3, page_beats + 4), rng.randrange(250, 600)]
        )
        offset = rng.randrange(page_beats) if rng.random() < 0.5 else page_beats - rng.randrange(1, 4)
        found.append((rng.randrange(1 << 40) * PAGE + offset * beat_bytes, beats))
    return found


@cocotb.test()
@cocotb.parametrize(stall=[0.3, 0.0])
async def bursts_follow_the_axi_rules(dut, stall: float):
    """With the AR channel and the memory stalling `stall` of the cycles, or never."""
    config = json.loads(os.environ["AXI_READER_TB_CONFIG"])
    beat_bytes, max_bursts = config["DATA_W"] // 8, config["MAX_BURSTS"]
    rng = random.Random(f"{config['seed']} {stall}")
    requests = reads(rng, config["reads"], beat_bytes)

    await reset(dut, ("req_valid", "req_addr", "req_beats", "arready", "rvalid", "rlast", "rready"))

    queue = list(requests)  # the request FIFO's contents, its head offered
    bursts = []  # (byte address, beats) of every AR handshake, in order
    in_flight = []  # beats still to come of each accepted burst, oldest first
    finished = False
    for cycle in range(config["cycles"]):
        dut.req_valid.value = int(bool(queue))
        if queue:
            dut.req_addr.value, dut.req_beats.value = queue[0]
        arready = rng.random() >= stall
        rvalid = bool(in_flight) and rng.random() >= stall
        dut.arready.value = int(arready)
        dut.rvalid.value = int(rvalid)
        dut.rlast.value = int(rvalid and in_flight[0] == 1)
        dut.rready.value = 1

        await FallingEdge(dut.clk)
        popped = int(dut.req_pop.value)
        assert not popped or queue, f"cycle {cycle}: a read taken when none was offered"
        accepted = None
        if int(dut.arvalid.value) and arready:
            accepted = (int(dut.araddr.value), int(dut.arlen.value) + 1)
            assert int(dut.arsize.value) == beat_bytes.bit_length() - 1
            bursts.append(accepted)
        idle = int(dut.idle.value)

        await RisingEdge(dut.clk)
        if popped:
            queue.pop(0)
        if rvalid:
            in_flight[0] -= 1
            if in_flight[0] == 0:
                in_flight.pop(0)
        if accepted:
            in_flight.append(accepted[1])
        assert len(in_flight) <= max_bursts, f"cycle {cycle}: {len(in_flight)} bursts in flight"
        if idle and not queue and not in_flight:
            finished = True
            break
    assert finished, f"not idle after {config['cycles']} cycles: {len(queue)} reads left"

    # Each read, in order, as the fewest bursts the rules allow: each as long as the read's rest,
    # 256 beats and its page let it be.
    taken = iter(bursts)
    for address, beats in requests:
        at, left = address, beats
        while left:
            burst = next(taken, None)
            assert burst is not None, f"read {address:#x} x {beats}: no burst for its last {left} beats"
            longest = min(left, MAX_LEN, (PAGE - at % PAGE) // beat_bytes)
            assert burst == (at, longest), f"read {address:#x} x {beats}: burst {burst}, expected {(at, longest)}"
            at, left = at + longest * beat_bytes, left - longest
    assert next(taken, None) is None, "bursts that no read asked for"
    dut._log.info("%d reads in %d bursts, %d cycles", len(requests), len(bursts), cycle)
