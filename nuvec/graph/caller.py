"""The public function a user called, found from the call stack, for error messages raised deep
inside shared helpers (`to_stream`, the creation path) that are not told the op's name.

Only error paths use it, so it costs nothing on the normal path.
"""

from __future__ import annotations

import sys


_NAMESPACES = ("nuvec", "nuvec.fast", "nuvec.linalg", "nuvec.fft", "nuvec.random")


def _is_public(name: str) -> bool:
    """Whether `name` is a public function of one of the namespaces already imported."""
    return any(hasattr(sys.modules.get(ns), name) for ns in _NAMESPACES)


def public_caller(default: str) -> str:
    """The name of the public function the user called, for a helper raising on its behalf.

    Walks outwards from the frame that called the raising helper while the frames belong to
    `nuvec`. The outermost frame naming a public function is the one the user called (`abs` for
    `mx.abs(x, stream="bogus")`, `trace` when `trace` calls `diagonal`). Where the user called a
    method of a class (`x[i]`, `x + y`, `x.at[i].add(v)`) the helper's own `default` is kept;
    generated wrappers (Array methods, batching rules) are skipped, as the namespaces (looked
    up, never imported here) do not export their names.

    Args:
        default: the name the raising helper was given; returned when no better one is found.

    Returns:
        The function's name, without module or class.

    Example:
        >>> from nuvec.graph.caller import public_caller
        >>> public_caller("abs")
        'abs'
    """
    frame = sys._getframe(2)
    public, outermost = None, None
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "nuvec":
        code = frame.f_code
        outermost = code.co_qualname
        if code.co_qualname == code.co_name and not outermost.startswith("_") and _is_public(
                outermost):
            public = outermost
        frame = frame.f_back
    if outermost is not None and "." in outermost and "<locals>" not in outermost:
        return default  # a method or special method of a class (`x[i]`, `x.at[i].add(v)`)
    return public or default


def name_function(fn, name: str):
    """Names a generated public function `name` (a function made by a factory, such as the
    elementwise ops), its code included, so `public_caller` finds it on the call stack.

    Args:
        fn: the function the factory made.
        name: its public name.

    Returns:
        `fn`, renamed.

    Example:
        >>> from nuvec.graph.caller import name_function
        >>> name_function(lambda x: x, "identity").__code__.co_name
        'identity'
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)
    return fn


def rename_error(error: BaseException, old: str, new: str) -> None:
    """Rewrites, in place, the leading `old:` of `error`'s message as `new:`, for a function
    that calls another public function whose checks write their own name out (`gather_qmm`
    calling `quantized_matmul`). Only error paths call it.

    Args:
        error: the exception being raised.
        old: the name its message may start with.
        new: the name to put there instead.

    Example:
        >>> from nuvec.graph.caller import rename_error
        >>> e = ValueError("quantized_matmul: bits must be an int, got 2.0")
        >>> rename_error(e, "quantized_matmul", "gather_qmm"); str(e)
        'gather_qmm: bits must be an int, got 2.0'
    """
    args = error.args
    if not args or not isinstance(args[0], str) or not args[0].startswith(old + ":"):
        return
    message = new + args[0][len(old):]
    if getattr(error, "_msg", None) == args[0]:  # NumPy's AxisError keeps its message apart
        error._msg = message  # type: ignore[attr-defined]
    error.args = (message, *args[1:])
