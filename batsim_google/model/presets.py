"""Models taken from the model paper (Da Costa, Grange, de Courchelle 2018) and its 2016 version.

``google``: Section 6 of the 2018 paper (dynamism 0.05 s; tasks 70 %, mass 1700 s, disparity 3.8;
services 30 %, mass 8000 s, disparity 24) with the priority rates of the 2016 generator listing
(``truncated_expon(6)`` for tasks, ``truncated_expon(3)`` for services).

``kmeans-2`` / ``kmeans-4``: the centroids of Tables 8 and 9 (frequency, mean makespan as mass,
disparity). Each centroid's mean Google priority (0-11) gives the priority rate through
:func:`batsim_google.model.priority.rate_for_centroid`. The clusters mix Finish- and Kill-ended tasks;
the one cluster of very long tasks (4-clustering, 137,630 s, disparity 1.4) is taken as services,
as Section 5.2 reads it; the others as tasks. The dynamism is the trace's, as in ``google``.

``google-2011-cell``: not the paper's: fitted by ``fit --censored`` from the shared trace parts
(task_events and job_events 00000-00002), shipped as ``data/google-2011-cell.toml``: the cell as
the trace shows it, with the lifetimes the window cuts fitted with censoring and the tasks running
at its start as a ``resident`` class (their number per machine); its derivation is in
docs/model-files.md.
"""

from __future__ import annotations

from batsim_google.errors import ParameterError
from batsim_google.model.priority import rate_for_centroid
from batsim_google.model.vocabulary import PRESET_NAMES
from batsim_google.model.workload_model import TaskClass, WorkloadModel
from batsim_google.parameters import packaged_data

GOOGLE_DYNAMISM = 0.05
_PAPER = "Da Costa et al. 2018"


def _centroid(name: str, kind, frequency, mass, disparity, priority, table: str) -> TaskClass:
    """A k-means class. The paper's listing would pass the centroid's Google priority (0-11) as the
    rate itself, giving the higher-priority cluster the lower mean; the rate used is the one whose
    mean is the centroid's priority on the ]0, 1] scale (:func:`rate_for_centroid`)."""
    return TaskClass(
        name=name,
        kind=kind,
        frequency=frequency,
        mass=mass,
        disparity=disparity,
        priority_rate=rate_for_centroid(priority),
        source=f"{_PAPER}, {table} (centroid priority {priority})",
    )


def _google() -> WorkloadModel:
    return WorkloadModel(
        name="google",
        source=f"{_PAPER}, Section 6; priority rates from the 2016 generator listing",
        dynamism=GOOGLE_DYNAMISM,
        classes=(
            TaskClass("task", "task", 0.7, 1700.0, 3.8, 6.0, source=f"{_PAPER}, Table 6"),
            TaskClass("service", "service", 0.3, 8000.0, 24.0, 3.0, source=f"{_PAPER}, Table 7"),
        ),
    )


def _kmeans_2() -> WorkloadModel:
    return WorkloadModel(
        name="kmeans-2",
        source=f"{_PAPER}, Table 8",
        dynamism=GOOGLE_DYNAMISM,
        classes=(
            _centroid("cluster0", "task", 0.405, 3508.0, 17.2, 0.51, "Table 8"),
            _centroid("cluster1", "task", 0.595, 2456.0, 6.2, 4.1, "Table 8"),
        ),
    )


def _kmeans_4() -> WorkloadModel:
    # Table 9's frequencies (17.9 + 26.2 + 55.2 + 0.7) add up to 100.0 %.
    return WorkloadModel(
        name="kmeans-4",
        source=f"{_PAPER}, Table 9",
        dynamism=GOOGLE_DYNAMISM,
        classes=(
            _centroid("cluster0", "task", 0.179, 1911.0, 19.8, 0.9, "Table 9"),
            _centroid("cluster1", "task", 0.262, 2482.0, 6.2, 0.53, "Table 9"),
            _centroid("cluster2", "task", 0.552, 1662.0, 4.4, 4.2, "Table 9"),
            _centroid("cluster3", "service", 0.007, 137630.0, 1.4, 3.39, "Table 9"),
        ),
    )


def _google_2011_cell() -> WorkloadModel:
    from batsim_google.model.workload_model import model_from_mapping

    return model_from_mapping(packaged_data(CELL_PRESET_FILE), source=f"package data {CELL_PRESET_FILE}")


CELL_PRESET_FILE = "google-2011-cell.toml"
PRESETS = dict(zip(PRESET_NAMES, (_google, _kmeans_2, _kmeans_4, _google_2011_cell), strict=True))


def preset(name: str) -> WorkloadModel:
    """The preset model called ``name`` (one of :data:`PRESETS`)."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ParameterError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
