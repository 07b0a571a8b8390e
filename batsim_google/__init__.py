"""Google-like workloads, platforms and a production-cell scheduler for Batsim/SimGrid.

The names of ``__all__`` are the Python API, in pipeline order (see docs/python.md). Each is
imported from its module on first use, so that ``import batsim_google`` (and so the command line)
does not pay for numpy, polars or scipy until something needs them.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module (under batsim_google) that defines it.
_MODULES = {
    # A workload model: the paper's presets, or a model file; the CPU/memory request law.
    "WorkloadModel": "model.workload_model",
    "load_model": "model.workload_model",
    "save_model": "model.workload_model",
    "PRESETS": "model.presets",
    "preset": "model.presets",
    "load_request_law": "model.request_law",
    # A platform: a cell of the 2011 trace's machines with its energy model, and machine failures.
    "google_2011_cell": "platform.cell",
    "load_energy_model": "platform.energy",
    "write_platform": "platform.simgrid_xml",
    "FailureLaw": "platform.failures",
    "draw_failures": "platform.failures",
    "write_availability_events": "platform.batsim_events",
    # A generated workload: tasks drawn in memory, or written as a Batsim JSON file.
    "generate": "generation.generator",
    "cell_load_scale": "generation.workload",
    "Generation": "generation.workload",
    "write_generated_workload": "generation.workload",
    # A workload converted from the Google trace or an SWF log.
    "RowAccount": "trace.row_accounting",
    "Selection": "trace.convert",
    "convert_trace": "trace.convert",
    "read_swf": "trace.swf",
    "write_records": "trace.convert",
    # A model fitted to a task table.
    "FitSettings": "fitting.model_fit",
    "fit_model": "fitting.model_fit",
    # A scheduler (the built-in one's policy, a user's Policy subclass, any other kind) and one
    # simulation of it, measured.
    "PolicyConfig": "scheduling.policy_config",
    "Policy": "scheduling.policy_api",
    "Scheduler": "simulation.schedulers",
    "RunInputs": "simulation.settings",
    "SimulationSettings": "simulation.settings",
    "simulate": "experiments.measured_run",
    # A campaign of simulations and its comparison.
    "load_campaign": "experiments.campaign",
    "compare": "experiments.compare",
    # The errors the package raises.
    "BatsimGoogleError": "errors",
    "ParameterError": "errors",
    "InputFileError": "errors",
    "SimulationError": "errors",
}

__all__ = list(_MODULES)


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use, then keep it here."""
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
