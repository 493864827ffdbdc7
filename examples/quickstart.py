"""A first tour of nuvec: lazy arrays, evaluation, streams and a gradient."""

import numpy as np

import nuvec as mx

# Operations record a graph; nothing is computed yet.
x = mx.array(np.linspace(-1.0, 1.0, 6).reshape(2, 3))  # float64 data becomes float32, as MLX
y = mx.exp(x) * 2 + 1
print("recorded:", y.shape, y.dtype, "evaluated:", y.is_evaluated)

# Evaluation happens on demand (eval, item, tolist, numpy.asarray) ...
mx.eval(y)
print("evaluated:", y.is_evaluated)
print(y)

# ... and per stream: two independent chains on two CPU streams may run concurrently.
s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
with mx.stream(s1):
    a = mx.sum(mx.exp(x), axis=1)
with mx.stream(s2):
    b = mx.sum(x * x, axis=0)
c = mx.sum(a) + mx.sum(b)  # runs on the default stream, after both inputs are ready
mx.eval(c)
print("a:", a.tolist(), "on", a.stream)
print("b:", b.tolist(), "on", b.stream)
print("c:", c.item())

# Transformations compose: the gradient of sum(exp(x) * x) is exp(x) * (1 + x).
df = mx.grad(lambda t: mx.sum(mx.exp(t) * t))
print("grad:", df(x))
