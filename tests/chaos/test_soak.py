"""The soak's arithmetic and its sampling of a process (chaos.soak)."""

from __future__ import annotations

import os
import subprocess

from chaos import soak_projection
from chaos.soak import _slopes, sample, slope_per_hour


def test_the_slope_is_per_hour_and_flat_series_have_none() -> None:
    assert slope_per_hour([(0.0, 100.0), (1.0, 102.0), (2.0, 104.0)]) == 120.0
    assert slope_per_hour([(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)]) == 0.0
    assert slope_per_hour([(0.0, 5.0)]) == 0.0


def test_a_process_is_sampled_from_proc_and_a_gone_one_is_none() -> None:
    mine = sample(os.getpid())
    assert mine is not None
    assert mine["rss_kib"] > 0 and mine["fds"] > 0 and mine["threads"] >= 1
    assert sample(2**22 + 1) is None  # above pid_max's default: no such process


def test_a_process_sampled_from_a_later_minute_on_has_its_own_series() -> None:
    samples = [
        {"minute": 0.0, "resource_version": 1, "leader": {"rss_kib": 10, "fds": 5, "threads": 2}},
        {"minute": 1.0, "resource_version": 9, "leader": {"rss_kib": 10, "fds": 5, "threads": 2},
         "projection_jvm": {"rss_kib": 100, "fds": 50, "threads": 20}},
        {"minute": 2.0, "resource_version": 20, "leader": {"rss_kib": 10, "fds": 5, "threads": 2},
         "projection_jvm": {"rss_kib": 102, "fds": 50, "threads": 20}},
    ]
    slopes = _slopes(samples)  # the second half of two points is one: no slope
    assert slopes["projection_jvm"]["rss_kib"] == {"first": 100.0, "last": 102.0,
                                                   "all": 120.0, "second_half": 0.0}
    assert slopes["leader"]["rss_kib"]["all"] == 0.0


def test_the_projection_jvm_is_found_among_a_drivers_children_only_if_it_is_java() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert soak_projection.jvm_pid(os.getpid()) is None
    finally:
        child.kill()
        child.wait()
    assert soak_projection.jvm_pid(2**22 + 1) is None
