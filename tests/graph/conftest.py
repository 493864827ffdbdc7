"""Fixtures of the graph tests."""

from __future__ import annotations

import pytest

from nuvec.graph import eager


@pytest.fixture
def plans(monkeypatch):
    """The number of chains each eager `plan` fused, in order; checks afterwards that every
    rewritten root ran or was put back."""
    fused: list[int] = []
    plan = eager.plan

    def counting(rest):
        out = plan(rest)
        fused.append(len(out[1]))
        return out

    monkeypatch.setattr(eager, "plan", counting)
    yield fused
    assert not eager.saved
