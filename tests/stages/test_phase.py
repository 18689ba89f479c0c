"""Tasks and phases: what a stage hands the runner."""

from __future__ import annotations

import dataclasses

import pytest

from curate.stages.phase import Phase, Task


def test_tasks_compare_by_key_and_place_not_payload():
    assert Task("web/00000", "shard 0", {"big": 1}, "web", "00000") == Task("web/00000", "shard 0", {"other": 2}, "web", "00000")
    assert Task("web/00000", "shard 0", None, "web", "00000") != Task("web/00001", "shard 0", None, "web", "00000")


def test_a_phase_is_frozen_and_labelled_for_people():
    phase = Phase("model-quality", [Task("a", "a", 1)], run=lambda p: {"in": p})
    assert phase.label == "model quality"
    assert (phase.accounts, phase.key, phase.outputs, phase.kernels) == (False, None, (), ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        phase.name = "other"  # type: ignore[misc]
