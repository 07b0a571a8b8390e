"""Whole-machine FCFS without preemption: a policy written on batsim-google's policy API.

Each task gets a machine of its own, in submission order; the first task that finds no free
machine blocks the ones behind it. Nothing is ever evicted. Run it with::

    batsim-google run --scheduler python=examples/policies/whole_machine_fcfs.py:WholeMachineFCFS ...
"""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.policy_api import BatsimNeeds, Policy


class WholeMachineFCFS(Policy):
    needs = BatsimNeeds(failures=True)

    def free_machines(self) -> np.ndarray:
        """Machines up, on and running nothing, lowest id first."""
        return np.flatnonzero(self.cluster.usable() & (self.cluster.tasks == 0))

    def schedule(self, now: float) -> None:
        free = list(self.free_machines())
        while self.pending and free:
            self.execute(self.pending[0], int(free.pop(0)), now)
