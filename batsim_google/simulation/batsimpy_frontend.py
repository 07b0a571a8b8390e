"""batsim-py front-end of the Google-cell scheduler: what batsim-py 1.0.5 can drive in Batsim 4.2.1.

batsim-py's ``SimulatorHandler`` starts Batsim itself, always with ``-E
--forward-profiles-on-submission`` (plus ``--enable-compute-sharing``, which we ask for) and never
with dynamic jobs or forwarded events, and it has no call to register jobs. So, with the same
:class:`CellPolicy` and helpers as the pybatsim front-end (:mod:`batsim_google.simulation.googleCell`), this
runs compute sharing, priorities and eviction, rejects, services ending at their lifetime and the
energy policies, and refuses with the reason what batsim-py cannot do there (README, "batsim-py"):

- restarts: evicted tasks come back as new jobs (dynamic job registration): ``restart`` must be
  ``none``;
- external events: a failed machine's tasks must be killed, after which batsim-py raises on the
  ``machine_available`` event; user kills need ``--forward-unknown-events``;
- jobs without walltime (``-1`` in Batsim 4 workloads, every task of ours): batsim-py's job parser
  raises on them;
- energy policies need hosts that also carry ``watt_per_state``, the property batsim-py reads
  (SimGrid 3.32 in Batsim 4.2.1 reads ``wattage_per_state``).

batsim-py's clock is in whole seconds (it floors Batsim's), so the policy sees whole seconds and
wake-ups are rounded up to the next second.

Run with ``python -m batsim_google.simulation.batsimpy_frontend --platform P --workload W -o OUTDIR``;
``batsim-google run --frontend batsim-py`` does it under a time limit. ``--policy-class
module:Class`` (or ``file.py:Class``) and ``--policy-options JSON`` run any policy on the policy API
(:mod:`batsim_google.scheduling.policy_api`) instead, if it needs no dynamic jobs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import click
from batsim_py import HostEvent, JobEvent, SimulatorHandler
from batsim_py.jobs import Job
from batsim_py.resources import Host

from batsim_google.scheduling.decisions import (
    Execute,
    Kill,
    Register,
    RegistrationFinished,
    Reject,
    SwitchOff,
    SwitchOn,
    WakeAt,
)
from batsim_google.scheduling.ledger_files import write_ledger
from batsim_google.scheduling.policy_api import Policy
from batsim_google.scheduling.policy_config import ALWAYS_ON, PolicyConfig
from batsim_google.simulation.dispatch import dispatch
from batsim_google.simulation.frontend import (
    BatsimPyUnsupported,
    ProgressFile,
    cell_policy,
    end_status,
    job_request,
    user_policy,
)
from batsim_google.simulation.preflight import check_batsim_py
from batsim_google.simulation.runner import OUTPUT_PREFIX, SimulationError, endpoint, free_port
from batsim_google.simulation.settings import RunInputs

#: batsim-py exports Batsim's outputs with this prefix in the temporary directory.
BATSIM_PY_PREFIX = "batsim"
#: Exit status when Batsim died under batsim-py (which would wait for it forever).
BATSIM_DIED = 3
WATCH_SECONDS = 0.2


def environment(batsim: str) -> dict[str, str]:
    """The environment in which batsim-py, which runs ``batsim`` from ``PATH``, finds ``batsim``."""
    path = shutil.which(batsim)
    if path is None:
        raise SimulationError(f"no '{batsim}' executable on PATH (Batsim 4.2.1 is needed)")
    if Path(path).name != "batsim":
        raise BatsimPyUnsupported(f"{batsim}: batsim-py only runs an executable named 'batsim'")
    return dict(os.environ, PATH=f"{Path(path).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def command(platform: Path, workload: Path, output: Path, policy: dict, progress_file: Path | None = None) -> list[str]:
    """Command line of this front-end for one simulation."""
    line = [sys.executable, "-m", __name__, "--platform", str(platform), "--workload", str(workload)]
    line += ["-o", str(output), "--policy", json.dumps(policy)]
    return line + (["--progress-file", str(progress_file)] if progress_file else [])


class BatsimPyCell:
    """Thin adapter between batsim-py's events and calls and :class:`CellPolicy`, or the policy
    ``policy_class`` names (with its ``policy_options``)."""

    def __init__(
        self,
        config: PolicyConfig,
        progress_file: str | Path | None = None,
        policy_class: str | None = None,
        policy_options: dict | None = None,
    ) -> None:
        self.config = config
        self.policy_class, self.policy_options = policy_class, policy_options or {}
        self.sim = SimulatorHandler(endpoint(free_port()))  # loopback only, said rather than left to batsim-py
        self.policy: Policy | None = None
        self.progress = ProgressFile(progress_file)
        self._switching: dict[int, bool] = {}  # machine -> switching on (True) or to sleep (False)
        self.sim.subscribe(JobEvent.SUBMITTED, self._on_submitted)
        self.sim.subscribe(JobEvent.COMPLETED, self._on_completed)
        self.sim.subscribe(HostEvent.STATE_CHANGED, self._on_host_changed)

    def run(self, platform: Path, workload: Path, output: Path) -> dict:
        """Simulate to the end; Batsim's outputs and the accounting go to ``output/out_*``."""
        threading.Thread(target=_exit_when_batsim_dies, daemon=True).start()
        try:
            saved, tempfile.tempdir = tempfile.tempdir, str(output)  # batsim-py exports to TMPDIR/batsim_*
            try:
                self.sim.start(str(platform), str(workload), allow_compute_sharing=True)
            finally:
                tempfile.tempdir = saved
            while self.sim.is_running:
                self._decide()
                self.sim.proceed_time()
            self.progress.report(self.sim.current_time, final=True)
        except ValueError as error:  # batsim-py's job parser refuses walltime -1
            if isinstance(error, BatsimPyUnsupported) or "walltime" not in str(error):
                raise
            raise BatsimPyUnsupported(
                f"{workload}: batsim-py rejects jobs without walltime (-1 in Batsim 4 workloads): {error}"
            ) from error
        finally:
            self.sim.close()
        for path in output.glob(f"{BATSIM_PY_PREFIX}_*"):
            path.replace(output / f"{OUTPUT_PREFIX}_{path.name.removeprefix(BATSIM_PY_PREFIX + '_')}")
        self._policy().sleep_log.write(output / OUTPUT_PREFIX)
        return write_ledger(self._policy().ledger, output / OUTPUT_PREFIX)

    def _policy(self) -> Policy:
        """The policy, made from the platform once Batsim described it."""
        if self.policy is None:
            hosts = sorted(self.sim.platform.hosts, key=lambda host: host.id)
            if self.policy_class is not None:
                self.policy = user_policy(
                    [host.metadata or {} for host in hosts], self.policy_class, self.policy_options
                )
                if self.policy.needs.dynamic_jobs:
                    raise BatsimPyUnsupported(f"{self.policy_class}: it registers jobs, which batsim-py cannot do")
                return self.policy
            if self.config.energy != ALWAYS_ON and any(host.pstates is None for host in hosts):
                raise BatsimPyUnsupported(
                    f"energy policy {self.config.energy!r}: batsim-py finds no power states; give every "
                    "host a watt_per_state property (batsim-py) equal to its wattage_per_state (SimGrid)"
                )
            self.policy = cell_policy([host.metadata or {} for host in hosts], self.config)
        return self.policy

    # ----- events -------------------------------------------------------------------------------

    def _on_submitted(self, job: Job) -> None:
        delay = getattr(job.profile, "delay", 0.0)
        request = job_request(job.id, job.subtime, job.metadata, job.walltime or -1.0, delay, job.res)
        self._policy().job_submitted(self.sim.current_time, request)

    def _on_completed(self, job: Job) -> None:
        self._policy().job_ended(self.sim.current_time, job.id, end_status(job.state.name))

    def _on_host_changed(self, host: Host) -> None:
        """Tell the policy when a machine it switched reached its power state."""
        on = self._switching.get(host.id)
        if on is None or not ((host.is_idle or host.is_computing) if on else host.is_sleeping):
            return
        del self._switching[host.id]
        self._policy().power_changed(self.sim.current_time, [host.id], on)

    def _woken(self, now: float) -> None:
        self._policy().woken(now)

    # ----- decisions -> batsim-py ---------------------------------------------------------------

    def _decide(self) -> None:
        """Apply the policy's decisions until it has none: a kill is answered at once by batsim-py,
        whose answer may bring events of the same instant."""
        now = self.sim.current_time
        while decisions := self._policy().decide(now):
            for decision in decisions:
                dispatch(self, decision)
        self.progress.report(now)

    # one handler per decision type, named in :data:`.dispatch.HANDLERS`

    def execute(self, decision: Execute) -> None:
        self.sim.allocate(decision.job_id, [decision.machine])

    def kill(self, decision: Kill) -> None:
        for job_id in decision.job_ids:  # a previous kill's answer may have ended it already
            if any(job.id == job_id and job.is_running for job in self.sim.jobs):
                self.sim.kill_job(job_id)

    def reject(self, decision: Reject) -> None:
        for job_id in decision.job_ids:
            self.sim.reject_job(job_id)

    def register(self, decision: Register) -> None:
        raise BatsimPyUnsupported("batsim-py cannot register jobs (check_batsim_py refuses restarts)")

    def switch_on(self, decision: SwitchOn) -> None:
        self._switching.update(dict.fromkeys(decision.machines, True))
        self.sim.switch_on(list(decision.machines))

    def switch_off(self, decision: SwitchOff) -> None:
        self._switching.update(dict.fromkeys(decision.machines, False))
        self.sim.switch_off(list(decision.machines))

    def wake_at(self, decision: WakeAt) -> None:
        self.sim.set_callback(math.ceil(decision.time), self._woken)

    def registration_finished(self, decision: RegistrationFinished) -> None:
        """Nothing registers jobs here: Batsim ends when the workload's jobs have."""


def _exit_when_batsim_dies() -> None:
    """End this process if Batsim fails: batsim-py would wait for its next message forever.

    Batsim is this process's only child; ``WNOWAIT`` leaves it for batsim-py to reap.
    """
    while True:
        try:
            child = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # not started yet, or already reaped by batsim-py
            child = None
        if child is not None:
            exited_well = child.si_code == os.CLD_EXITED and child.si_status == 0
            stopped = child.si_code == os.CLD_KILLED and child.si_status == signal.SIGTERM  # by batsim-py
            if exited_well or stopped:
                return
            how = f"status {child.si_status}" if child.si_code == os.CLD_EXITED else f"signal {child.si_status}"
            print(f"Batsim ended with {how}; stopping the batsim-py front-end", file=sys.stderr, flush=True)
            os._exit(BATSIM_DIED)
        time.sleep(WATCH_SECONDS)


@click.command()
@click.option("--platform", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--workload", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for Batsim's outputs and the accounting.",
)
@click.option("--policy", "policy_json", default="{}", show_default=True, help="PolicyConfig fields, as JSON.")
@click.option("--policy-class", help="Another policy on the policy API: module:Class or file.py:Class.")
@click.option("--policy-options", default="{}", show_default=True, help="That policy's options, as JSON.")
@click.option(
    "--progress-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the simulated time reached is written.",
)
def main(
    platform: Path,
    workload: Path,
    output: Path,
    policy_json: str,
    policy_class: str | None,
    policy_options: str,
    progress_file: Path | None,
) -> None:
    """Simulate WORKLOAD on PLATFORM with the Google-cell scheduler (or --policy-class) through batsim-py."""
    try:
        config = PolicyConfig(**json.loads(policy_json))
        check_batsim_py(config if policy_class is None else None, RunInputs(platform, [workload]))
        options = json.loads(policy_options)
    except (ValueError, TypeError) as error:
        raise click.UsageError(str(error)) from error
    output.mkdir(parents=True, exist_ok=True)
    try:
        cell = BatsimPyCell(config, progress_file, policy_class, options)
        summary = cell.run(platform, workload, output.resolve())
    except BatsimPyUnsupported as error:
        raise click.ClickException(str(error)) from error
    click.echo(json.dumps(summary))


if __name__ == "__main__":
    main()
