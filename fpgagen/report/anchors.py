"""Published throughputs of the Graph Challenge networks, for the report to set a design beside.

Edges per second as the challenge counts them: inputs times all the network's edges, per second
(the report's "edges per second" row). Sources: the SNICIT paper (ICPP 2023) for one RTX A6000
running the 2021 champion's code; Huang et al., HPEC 2019, the one published FPGA result (a
Virtex-7 VC709 with DDR3, 1024 x 120 only: 60,000 images in 251 s).
"""

from __future__ import annotations

import re

_GRAPH_CHALLENGE = re.compile(r"^graphchallenge_n(\d+)_l(\d+)$")
_A6000 = "one RTX A6000, the 2021 champion's code (SNICIT, ICPP 2023)"
PUBLISHED: dict[tuple[int, int], list[tuple[str, float]]] = {
    (1024, 120): [(_A6000, 15.8e12), ("one Virtex-7 VC709 FPGA (Huang et al., HPEC 2019)", 0.94e9)],
    (65536, 120): [(_A6000, 27.0e12)],
    (65536, 1920): [(_A6000, 55.6e12)],
}


def published(model_name: str) -> list[tuple[str, float]]:
    """The published figures for the Graph Challenge network `model_name` names (fpgagen's example
    and TSV import name them graphchallenge_n<N>_l<L>); none for any other model."""
    found = _GRAPH_CHALLENGE.match(model_name)
    return PUBLISHED.get((int(found[1]), int(found[2])), []) if found else []
