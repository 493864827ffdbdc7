"""`Ticket`: a recorded collective's place in its group's sequence, and its header exchange.

Headers are exchanged when a collective is recorded (nonblocking sends and receives that
complete while the graph is built), so evaluating it adds no synchronisation beyond the data
transfer: the kernel only waits for the requests, usually complete by then, and compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ticket:
    """The `sequence` number of a collective in its group, with its header exchange (MPI
    requests and the header rows of every rank; empty for a backend that checks nothing)."""

    sequence: int
    description: str = ""
    mine: Any = None
    rows: Any = None
    requests: list[Any] = field(default_factory=list)
