"""Groups of processes and the choice of a communication backend (`init`, `is_available`).

A `Group` wraps one communicator (MPI through mpi4py, NCCL through CuPy) or none, for the group
of this process alone. mpi4py and CuPy are imported only by `init`, never by `import nuvec`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from nuvec.graph.device import DeviceType, default_device
from nuvec.graph.device import is_available as device_available

BACKENDS = ("any", "mpi", "nccl", "ring", "jaccl")
# MLX's backends that nuvec does not build (its TCP ring, Thunderbolt RDMA): accepted by name,
# so MLX code runs in one process; never available
UNBUILT = ("ring", "jaccl")
DEFAULT_TIMEOUT = 300.0
TIMEOUT_VARIABLE = "NUVEC_DISTRIBUTED_TIMEOUT"
# environment variables that MPI launchers (MPICH's Hydra, Open MPI, PMIx, Slurm) set
LAUNCHER_VARIABLES = (
    "PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
)


class Group:
    """A group of processes that communicate, as `mlx.core.distributed.Group`.

    Made by `init` (all launched processes) or `Group.split`. A group of size 1 needs no
    backend: its collectives return their input.

    Example:
        >>> import nuvec as mx
        >>> world = mx.distributed.init()
        >>> world.rank(), world.size()
        (0, 1)
    """

    __slots__ = ("_communicator", "_rank", "_size", "_backend")

    def __init__(self, communicator: Any, rank: int, size: int, backend: str):
        self._communicator = communicator
        self._rank = rank
        self._size = size
        self._backend = backend

    def rank(self) -> int:
        """The rank of this process in the group (-1 if it is not a member).

        Example:
            >>> import nuvec as mx
            >>> mx.distributed.init().rank()
            0
        """
        return self._rank

    def size(self) -> int:
        """The number of processes in the group (0 for a group this process is not in).

        Example:
            >>> import nuvec as mx
            >>> mx.distributed.init().size()
            1
        """
        return self._size

    @property
    def backend(self) -> str:
        """The backend's name: `"mpi"`, `"nccl"`, or `"none"` for a group of one process."""
        return self._backend

    @property
    def communicator(self) -> Any:
        """The backend's communicator (what the collective kernels call); `None` for size 1."""
        return self._communicator

    def is_member(self) -> bool:
        """Whether this process belongs to the group (`split` with a negative color leaves it).

        Example:
            >>> import nuvec as mx
            >>> mx.distributed.init().is_member()
            True
        """
        return self._rank >= 0

    def split(self, color: int, key: int = -1) -> Group:
        """Splits the group into subgroups, one per `color`, as MLX's `Group.split`.

        Every process of the group must call it (it communicates). Processes passing the same
        color form one new group, ranked by `key` (ties and `key=-1` by their rank here). A
        negative color (nuvec's extension, MPI's `MPI_UNDEFINED`) joins no group: the result
        has rank -1 and size 0, and collectives on it raise.

        Args:
            color: the subgroup to join (an int; negative: none).
            key: the order within the new group; -1 keeps this group's order.

        Returns:
            The group of the processes that passed the same color.

        Raises:
            TypeError: if `color` or `key` is not an int.
            ValueError: if this process is not in the group.

        Example:
            >>> import nuvec as mx
            >>> mx.distributed.init().split(0).size()
            1
        """
        for name, value in (("color", color), ("key", key)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"split: {name} must be an int, got {type(value).__name__}")
        if not self.is_member():
            raise ValueError("split: this process is not a member of the group")
        if self._communicator is None:
            if color < 0:
                return Group(None, -1, 0, self._backend)
            return Group(None, 0, 1, self._backend)
        communicator = self._communicator.split(color, self._rank if key == -1 else key)
        if communicator is None:
            return Group(None, -1, 0, self._backend)
        return Group(communicator, communicator.rank, communicator.size, self._backend)

    def __repr__(self) -> str:
        return f"Group(rank={self._rank}, size={self._size}, backend={self._backend!r})"


_world: Group | None = None
_by_backend: dict[str, Group] = {}


def _launched() -> bool:
    """Whether an MPI launcher started this process (so MPI is worth initialising)."""
    return any(name in os.environ for name in LAUNCHER_VARIABLES)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _gpu_usable() -> bool:
    return _module_exists("cupy") and device_available(DeviceType.gpu)


def is_available(backend: str = "any") -> bool:
    """Whether a communication backend can be used here, as MLX's `is_available`.

    `"mpi"` needs mpi4py with an MPI library; `"nccl"` needs CuPy and a GPU; `"any"` either.
    Nothing is initialised (mpi4py is not imported).

    Args:
        backend: `"any"`, `"mpi"` or `"nccl"` (MLX's `"ring"` and `"jaccl"` are accepted and
            never available).

    Returns:
        True if `init(backend=backend, strict=True)` can succeed here.

    Raises:
        ValueError: for an unknown backend name.

    Example:
        >>> import nuvec as mx
        >>> isinstance(mx.distributed.is_available(), bool)
        True
    """
    _check_backend("is_available", backend)
    if backend in UNBUILT:
        return False
    if backend in ("any", "mpi") and _module_exists("mpi4py"):
        return True
    return backend in ("any", "nccl") and _gpu_usable()


def _check_backend(op: str, backend: Any) -> None:
    if not isinstance(backend, str):
        raise TypeError(f"{op}: backend must be a str, got {type(backend).__name__}")
    if backend not in BACKENDS:
        raise ValueError(f"{op}: backend must be one of {', '.join(map(repr, BACKENDS))}, "
                         f"got {backend!r}")


def resolve_timeout(timeout: Any) -> float:
    """The timeout of collectives: `timeout`, else `NUVEC_DISTRIBUTED_TIMEOUT`, else 300 s."""
    if timeout is None:
        text = os.environ.get(TIMEOUT_VARIABLE)
        if text is None:
            return DEFAULT_TIMEOUT
        try:
            timeout = float(text)
        except ValueError:
            raise ValueError(f"init: {TIMEOUT_VARIABLE} must be a number of seconds, "
                             f"got {text!r}") from None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"init: timeout must be a number of seconds, got {type(timeout).__name__}")
    if not timeout > 0:
        raise ValueError(f"init: timeout must be positive, got {timeout}")
    return float(timeout)


def _make(backend: str, timeout: float) -> Group:
    """Initialises `backend` ("mpi" or "nccl"); raises RuntimeError if it cannot."""
    module = importlib.import_module(f"nuvec.distributed.{backend}")
    communicator = module.world(timeout)
    return Group(communicator, communicator.rank, communicator.size, backend)


def init(strict: bool = False, backend: str = "any", *, timeout: float | None = None) -> Group:
    """Initialises communication and returns the group of all launched processes, as MLX.

    With `backend="any"`: NCCL if the default device is a GPU and NCCL initialises, else MPI if
    an MPI launcher (`mpiexec -n N python script.py`) started this process, else the group of
    this process alone. The first group made is returned by later calls (and used by
    collectives given no `group`).

    Args:
        strict: raise instead of returning a group of size 1 when no backend initialises.
        backend: `"any"`, `"mpi"` or `"nccl"`; MLX's `"ring"` and `"jaccl"`, which nuvec does
            not build, give the group of this process alone (`strict`: raise).
        timeout: (nuvec's extension) seconds a collective may wait for the other processes
            before raising; default `NUVEC_DISTRIBUTED_TIMEOUT` or 300.

    Returns:
        The group of all processes.

    Raises:
        RuntimeError: if `strict` and the backend cannot be initialised.
        ValueError: for an unknown backend name or a non-positive timeout.

    Example:
        >>> import nuvec as mx
        >>> mx.distributed.init().size()
        1
    """
    global _world
    _check_backend("init", backend)
    seconds = resolve_timeout(timeout)
    found = _by_backend.get(backend) if backend != "any" else _world
    if found is not None:
        return found
    errors = []
    for name in _candidates(backend):
        try:
            group = _make(name, seconds)
        except (ImportError, RuntimeError) as exc:
            errors.append(f"{name}: {exc}")
            continue
        _by_backend[name] = group
        if _world is None:
            _world = group
        return group
    if strict:
        reason = "; ".join(errors) or (
            "nuvec does not build it; launch with mpiexec and use 'mpi' or 'any'"
            if backend in UNBUILT else "no backend is available (pip install mpi4py mpich)")
        raise RuntimeError(f"init: cannot initialise backend {backend!r}: {reason}")
    group = Group(None, 0, 1, "none")
    if _world is None:
        _world = group
    return group


def _candidates(backend: str) -> list[str]:
    if backend in UNBUILT:
        return []
    if backend != "any":
        return [backend]
    names = []
    if _gpu_default() and _module_exists("cupy"):
        names.append("nccl")
    if _launched() and _module_exists("mpi4py"):
        names.append("mpi")
    return names


def _gpu_default() -> bool:
    return default_device().type is DeviceType.gpu


def world_group() -> Group:
    """The group collectives use when given none: `init()`'s."""
    return _world if _world is not None else init()
