"""Makes `mx` (nuvec) and `np` (NumPy) available to the docstring examples run by pytest."""

import numpy as np
import pytest

import nuvec


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["mx"] = nuvec
    doctest_namespace["np"] = np
