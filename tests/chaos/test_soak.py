"""The soak's arithmetic and its sampling of a process (chaos.soak)."""

from __future__ import annotations

import os

from chaos.soak import sample, slope_per_hour


def test_the_slope_is_per_hour_and_flat_series_have_none() -> None:
    assert slope_per_hour([(0.0, 100.0), (1.0, 102.0), (2.0, 104.0)]) == 120.0
    assert slope_per_hour([(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)]) == 0.0
    assert slope_per_hour([(0.0, 5.0)]) == 0.0


def test_a_process_is_sampled_from_proc_and_a_gone_one_is_none() -> None:
    mine = sample(os.getpid())
    assert mine is not None
    assert mine["rss_kib"] > 0 and mine["fds"] > 0 and mine["threads"] >= 1
    assert sample(2**22 + 1) is None  # above pid_max's default: no such process
