"""Empirical law of normalized CPU and memory requests, per kind (task or service).

Requests follow Google's semantics: a fraction of the largest machine's capacity. The default law
is the joint distribution of (CPU, memory) requests observed in the real trace sample, at the
terminal event of each task: FINISH rows for *tasks*, KILL rows for *services* (the model paper's
a-priori split). It ships as ``data/requests.json`` with its provenance; any law derived with
:func:`batsim_google.trace.derive_requests.derive_request_law` (command
``batsim-google requests``) can replace it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from batsim_google.errors import InputFileError, ParameterError
from batsim_google.output_files import write_text
from batsim_google.parameters import load_json_law

if TYPE_CHECKING:
    from batsim_google.model.workload_model import TaskClass

DEFAULT_LAW = "requests.json"
#: The entry of the requests of the tasks running at an instant (in the shipped law, those running
#: at the trace's start): the warm start draws from it when the law has it.
RUNNING = "resident"


@dataclass(frozen=True)
class EmpiricalRequests:
    """Distinct (cpu, memory) request pairs and how often each was seen."""

    cpu: np.ndarray
    memory: np.ndarray
    count: np.ndarray

    def __post_init__(self) -> None:
        if not (len(self.cpu) == len(self.memory) == len(self.count)) or len(self.cpu) == 0:
            raise ParameterError("cpu, memory and count must be non-empty lists of one length")
        values = np.concatenate([self.count, self.cpu, self.memory]).astype(float)
        if not np.isfinite(values).all() or np.any(self.count <= 0) or np.any(self.cpu < 0) or np.any(self.memory < 0):
            raise ParameterError("counts must be finite and > 0, requests finite and >= 0")

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``size`` (cpu, memory) pairs drawn with replacement, weighted by count."""
        index = rng.choice(len(self.count), size=size, p=self.count / self.count.sum())
        return self.cpu[index], self.memory[index]

    def within(self, task_class: TaskClass, where: str) -> EmpiricalRequests:
        """The pairs in ``task_class``'s request ranges (all of them without); ``where`` names the
        class in the refusal of an empty band."""
        from batsim_google.model.workload_model import in_ranges

        if task_class.cpu_range is None and task_class.memory_range is None:
            return self
        kept = in_ranges(self.cpu, self.memory, task_class.cpu_range, task_class.memory_range)
        if not kept.any():
            raise ParameterError(
                f"{where}: the request law has no request in cpu_range {task_class.cpu_range} and "
                f"memory_range {task_class.memory_range}"
            )
        return EmpiricalRequests(self.cpu[kept], self.memory[kept], self.count[kept])


@dataclass(frozen=True)
class RequestLaw:
    """One empirical request law per kind, with where it comes from."""

    kinds: Mapping[str, EmpiricalRequests]
    provenance: Mapping[str, Any]
    #: Where it was read from, for the errors.
    source: str = "the request law"

    def running(self, kind: str) -> EmpiricalRequests:
        """The requests of a task running at an instant: the :data:`RUNNING` entry when the law
        has one, else its kind's. Tasks present at once are not a sample of the tasks submitted:
        the long-lived ones are over-represented, and they request more (at the trace's start,
        0.0563 CPU on average against 0.0243 for Kill-ended tasks)."""
        return self.kinds.get(RUNNING) or self.for_kind(kind)

    def for_class(self, task_class: TaskClass, where: str) -> EmpiricalRequests:
        """The requests a class's tasks draw: its own when it has them, else its kind's within its
        ranges."""
        own = task_class.requests
        if own is not None:
            return EmpiricalRequests(*(np.asarray(v, dtype=float) for v in (own.cpu, own.memory, own.count)))
        return self.for_kind(task_class.kind).within(task_class, where)

    def for_kind(self, kind: str) -> EmpiricalRequests:
        try:
            return self.kinds[kind]
        except KeyError:
            raise InputFileError(f"{self.source}: the request law has no {kind!r} entry") from None

    def to_json(self) -> dict[str, Any]:
        return {
            "provenance": dict(self.provenance),
            "kinds": {
                kind: {
                    "cpu": law.cpu.tolist(),
                    "memory": law.memory.tolist(),
                    "count": law.count.tolist(),
                }
                for kind, law in self.kinds.items()
            },
        }

    def save(self, path: str | Path) -> None:
        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


def request_law_from_json(data: Mapping[str, Any], source: str) -> RequestLaw:
    try:
        kinds = {
            kind: EmpiricalRequests(
                np.asarray(entry["cpu"], dtype=float),
                np.asarray(entry["memory"], dtype=float),
                np.asarray(entry["count"], dtype=float),
            )
            for kind, entry in data["kinds"].items()
        }
    except (KeyError, TypeError, ValueError) as error:
        raise InputFileError(f"{source}: not a request law ({error})") from error
    for kind, law in kinds.items():
        for resource in ("cpu", "memory"):
            largest = getattr(law, resource).max()
            if largest > 1:  # a fraction of the largest machine: above 1, no machine can run it
                raise InputFileError(
                    f"{source}: kinds.{kind}.{resource} holds {largest:g}, above 1 (requests are fractions "
                    "of the largest machine's capacity)"
                )
    return RequestLaw(kinds, data.get("provenance", {}), source)


def load_request_law(path: str | Path | None = None) -> RequestLaw:
    """The law in ``path``, or the default one shipped with the package."""
    return load_json_law(path, DEFAULT_LAW, request_law_from_json)
