"""The CPU kernel table: the shared bodies bound to NumPy, and the decorator for NumPy-only
kernels and overrides."""

from __future__ import annotations

import numpy as np

import nuvec.backends.common  # noqa: F401  (registers every shared body)
from nuvec.backends.common.registry import bind
from nuvec.graph.backend import KernelTable

table = KernelTable("cpu")
bind(table, np)
kernels = table.kernels  # primitive class -> kernel(primitive, *inputs)
writes_into = table.writes_into
kernel = table.register  # @kernel(Class, out=False, replace=False)
