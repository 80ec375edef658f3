"""Pareto fronts of a sweep: the designs no other design beats on both of two figures."""

from __future__ import annotations

import numpy as np


def pareto_front(gain: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Which points are on the front of `gain` (more is better) against `cost` (less is better).

    A point is dominated when another has at least its gain at no more than its cost, and is
    strictly better in one of the two; equal points are all on the front.
    """
    gain, cost = np.asarray(gain, dtype=np.float64), np.asarray(cost, dtype=np.float64)
    at_least = (gain[None, :] >= gain[:, None]) & (cost[None, :] <= cost[:, None])
    better = (gain[None, :] > gain[:, None]) | (cost[None, :] < cost[:, None])
    return ~np.any(at_least & better, axis=1)
