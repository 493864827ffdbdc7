"""The error a failed communication raises."""

from __future__ import annotations

from nuvec.graph.evaluator import EvaluationError


class DistributedError(EvaluationError):
    """A collective failed while evaluating: the ranks called different operations, shapes or
    dtypes, or a rank did not join within the timeout. The message names the operation, the
    ranks and the shapes.

    Example:
        >>> import nuvec as mx
        >>> issubclass(mx.distributed.DistributedError, mx.EvaluationError)
        True
    """
