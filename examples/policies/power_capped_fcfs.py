"""Whole-machine FCFS on at most K awake machines: the others are put to sleep at the start.

A policy on batsim-google's policy API; the platform needs sleep states (``sleep_pstates``) and
Batsim's energy plugin. ``options = {awake = K}`` sets K (default 16)::

    batsim-google run --scheduler python=examples/policies/power_capped_fcfs.py:PowerCappedFCFS \\
        --scheduler-options '{"awake": 8}' ...
"""

from __future__ import annotations

from whole_machine_fcfs import WholeMachineFCFS

from batsim_google.scheduling.policy_api import BatsimNeeds


class PowerCappedFCFS(WholeMachineFCFS):
    needs = BatsimNeeds(sleep_states=True, failures=False)

    def __init__(self, cpu, memory, awake: int = 16) -> None:
        super().__init__(cpu, memory)
        if awake < 1:
            raise ValueError(f"awake must be at least 1 (got {awake})")
        self.awake = awake
        self.capped = False

    def schedule(self, now: float) -> None:
        if not self.capped:
            self.capped = True
            asleep = list(range(min(self.awake, len(self.cluster)), len(self.cluster)))
            if asleep:
                self.switch_off(asleep, now)
        super().schedule(now)
