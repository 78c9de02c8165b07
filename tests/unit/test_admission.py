"""Admission from measured load (pipeline.compute.admission): refuse the session that would push
the admitted ones past the TTFA objective, never on too little evidence."""

from __future__ import annotations

import math

from pipeline.compute.admission import LoadModel


def loaded(busy: float, ttfa_ms: float, turns: int = 10) -> LoadModel:
    model = LoadModel(800)
    for i in range(turns):
        model.turn(float(i), ttfa_ms)
    model.busy_total(0.0, 0.0)
    model.busy_total(60.0, 60.0 * busy)
    return model


def test_nothing_measured_is_no_reason_to_refuse() -> None:
    assert LoadModel(800).verdict(3).admit
    assert loaded(0.9, 700, turns=2).verdict(3).admit  # too few turns to judge


def test_a_lightly_loaded_server_admits_with_a_prediction() -> None:
    verdict = loaded(0.2, 500).verdict(2)
    assert verdict.admit
    assert verdict.predicted_ms is not None
    assert 500 < verdict.predicted_ms < 800  # 500 * 0.8 / 0.7


def test_the_session_that_would_break_the_objective_is_refused() -> None:
    model = loaded(0.5, 600)
    assert model.verdict(4).admit  # 0.5 -> 0.625: 600 * 0.5 / 0.375 = 800
    refused = model.verdict(2)  # 0.5 -> 0.75: 600 * 0.5 / 0.25 = 1200
    assert not refused.admit and refused.predicted_ms == 1200
    assert "1200 ms" in refused.reason and "800 ms" in refused.reason


def test_a_saturated_cpu_refuses_whatever_the_recent_ttfa() -> None:
    verdict = loaded(0.8, 100).verdict(1)
    assert not verdict.admit and verdict.predicted_ms == math.inf


def test_old_measurements_leave_the_window() -> None:
    model = loaded(0.8, 700)
    model.busy_total(300.0, 60 * 0.8)  # idle for four minutes since
    model.turn(300.0, 400)
    assert model.busy_share() is None or model.busy_share() < 0.05
    assert model.verdict(1).admit
