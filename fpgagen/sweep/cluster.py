"""The Dask cluster a sweep runs on: a local one of worker processes, or an existing scheduler.

Workers run one point at a time per thread; a local cluster gets one single-threaded worker
process per core, so that each point has a core of its own (and the GIL never serializes two).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distributed import Client, LocalCluster

from .. import __version__
from ..errors import FpgagenError
from .point import sweep_visible


@contextmanager
def dask_client(address: str | None, workers: int | None, timeout: float) -> Iterator[tuple[Client, str]]:
    """A client of the scheduler at `address`, or of a new local cluster of `workers` processes
    (default: one per core); with it, a description of the cluster for the records."""
    if address is None:
        count = workers or os.cpu_count() or 1
        with (
            LocalCluster(
                n_workers=count, threads_per_worker=1, processes=True, dashboard_address=":0",
                silence_logs=logging.ERROR,
            ) as cluster,
            Client(cluster, set_as_default=False) as client,
        ):  # fmt: skip
            yield client, f"a local Dask cluster of {count} worker process{'es' if count > 1 else ''}"
        return
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise FpgagenError(f"--cluster {address}: no Dask scheduler answers there ({exc})") from None
    with client:
        yield client, f"the Dask scheduler at {address}"


def check_workers(client: Client, outdir: Path | None = None, run: str | None = None) -> None:
    """Refuse workers that cannot run this fpgagen's points and, when designs are kept, workers
    that do not see the sweep's folder `outdir` (of sweep `run`) at the same path."""
    found = client.run(_worker_facts, None if outdir is None else str(outdir), run, on_error="return")
    for address, facts in sorted(found.items()):
        if isinstance(facts, BaseException):
            raise FpgagenError(f"Dask worker {address} cannot run fpgagen ({type(facts).__name__}: {facts})")
        if facts["fpgagen"] != __version__:
            raise FpgagenError(
                f"Dask worker {address} has fpgagen {facts['fpgagen']}, this is {__version__}; install the same on every worker"
            )
        if outdir is not None and not facts["sees"]:
            raise FpgagenError(
                f"--keep-designs: Dask worker {address} ({facts['host']}) does not see {outdir}; designs can be kept "
                "only in a folder on a filesystem the workers share, at the same path"
            )


def _worker_facts(outdir: str | None, run: str | None) -> dict:
    return {
        "fpgagen": __version__,
        "host": socket.gethostname(),
        "sees": outdir is not None and sweep_visible(Path(outdir), run),
    }
