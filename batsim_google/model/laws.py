"""Parametric laws a model can select for makespans and inter-arrival times.

The model paper uses a log-normal for makespans and a Lomax (its shifted Pareto) for
inter-arrivals; Gaevoy et al. compare exponential, gamma, hyperexponential and hypergamma laws.
Each law here is a small frozen value with the parameters a model file spells, backed by scipy for
its density and distribution function, and drawn *vectorized*: :func:`draw_by_class` draws one
value per task with the law of the task's class, one numpy call per kind of law (mixtures: the
branch index first, then the branch law), always from the ``numpy.random.Generator`` given. Draws
follow scipy's own algorithm for each law (``rvs``: the same variates from the same generator,
tested), written with numpy so that generating never imports scipy.stats, which takes a second;
scipy is imported where a density, a distribution function or a solver is needed.

Model files write a law as a table, e.g. ``{law = "gamma", shape = 0.6, scale = 2100}`` or
``{law = "hyperexponential", weights = [0.7, 0.3], rates = [0.01, 0.0002]}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from batsim_google.errors import ParameterError
from batsim_google.parameters import MAX_TIME_S, known_keys, number, numbers, require, table

#: Tolerance on the sum of mixture weights.
WEIGHT_TOLERANCE = 1e-6


class Law:
    """Common interface of the laws; subclasses are frozen dataclasses of their parameters."""

    #: How model files name the law (``law = "..."``).
    name: ClassVar[str]

    def check(self, where: str) -> None:
        raise NotImplementedError

    @property
    def n_parameters(self) -> int:
        """Free parameters, for the AIC."""
        raise NotImplementedError

    def cdf(self, x) -> np.ndarray:
        raise NotImplementedError

    def logpdf(self, x) -> np.ndarray:
        raise NotImplementedError

    def mean(self) -> float:
        raise NotImplementedError

    def median(self) -> float:
        raise NotImplementedError

    @classmethod
    def draw(cls, laws: Sequence[Law], index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value per entry of ``index``, drawn from ``laws[index[j]]`` (all of this class)."""
        raise NotImplementedError

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return type(self).draw([self], np.zeros(size, dtype=np.intp), rng)

    def to_mapping(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"law": self.name, **{k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}}

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], where: str) -> Law:
        known_keys(raw, {"law", *(f.name for f in fields(cls))}, where)
        values = {
            f.name: numbers(raw, f.name, f"{where}.")
            if f.type.startswith("tuple")
            else number(raw, f.name, f"{where}.")
            for f in fields(cls)
        }
        law = cls(**values)
        law.check(where)
        try:
            median = law.median()
        except NotImplementedError:  # a law of values with weights: its values are checked
            return law
        if not median <= MAX_TIME_S:  # a law of times or counts: past it, every draw is refused downstream
            raise ParameterError(
                f"{where}: the law's median ({median:.4g}) must be at most 2^42 (got parameters {values})"
            )
        return law


class _ScipyLaw(Law):
    """A law with one scipy distribution whose parameters broadcast over arrays."""

    @staticmethod
    def _scipy(**parameters):
        raise NotImplementedError

    @staticmethod
    def _variates(rng: np.random.Generator, size: int, **parameters) -> np.ndarray:
        """``size`` draws with per-draw parameters, as ``_scipy(**parameters).rvs`` makes them."""
        raise NotImplementedError

    def _frozen(self):
        return self._scipy(**{f.name: getattr(self, f.name) for f in fields(self)})

    @property
    def n_parameters(self) -> int:
        return len(fields(self))

    def cdf(self, x) -> np.ndarray:
        return self._frozen().cdf(x)

    def logpdf(self, x) -> np.ndarray:
        return self._frozen().logpdf(x)

    def mean(self) -> float:
        return float(self._frozen().mean())

    def median(self) -> float:
        return float(self._frozen().median())

    @classmethod
    def draw(cls, laws, index, rng):
        parameters = {f.name: np.array([getattr(law, f.name) for law in laws])[index] for f in fields(cls)}
        return cls._variates(rng, len(index), **parameters)

    def check(self, where: str) -> None:
        for f in fields(self):
            require(f"{where}.{f.name}", getattr(self, f.name), getattr(self, f.name) > 0.0, "> 0")


@dataclass(frozen=True)
class LogNormal(_ScipyLaw):
    """ln X ~ Normal(mu, sigma): median e^mu, mean e^(mu + sigma^2/2)."""

    name: ClassVar[str] = "lognormal"
    mu: float
    sigma: float

    @staticmethod
    def _scipy(mu, sigma):
        from scipy import stats

        return stats.lognorm(sigma, scale=np.exp(mu))

    @staticmethod
    def _variates(rng, size, mu, sigma):
        return np.exp(sigma * rng.standard_normal(size)) * np.exp(mu)

    def check(self, where: str) -> None:
        require(f"{where}.sigma", self.sigma, self.sigma > 0.0, "> 0")


@dataclass(frozen=True)
class Pareto(_ScipyLaw):
    """Pareto (type I): P(X > x) = (scale / x)^shape for x >= scale."""

    name: ClassVar[str] = "pareto"
    shape: float
    scale: float

    @staticmethod
    def _scipy(shape, scale):
        from scipy import stats

        return stats.pareto(shape, scale=scale)

    @staticmethod
    def _variates(rng, size, shape, scale):
        return pow(1 - rng.uniform(size=size), -1.0 / shape) * scale  # the inverse of the CDF


@dataclass(frozen=True)
class Lomax(_ScipyLaw):
    """Lomax (Pareto type II): P(X > x) = (1 + x / scale)^-shape for x >= 0.

    The model paper's inter-arrival law ``pareto(4, loc=-1) * 3 * dynamism`` is Lomax(4, 3 dynamism).
    """

    name: ClassVar[str] = "lomax"
    shape: float
    scale: float

    @staticmethod
    def _scipy(shape, scale):
        from scipy import stats

        return stats.lomax(shape, scale=scale)

    @staticmethod
    def _variates(rng, size, shape, scale):
        from scipy import special

        return special.expm1(-special.log1p(-rng.uniform(size=size)) / shape) * scale  # the inverse of the CDF


@dataclass(frozen=True)
class Exponential(_ScipyLaw):
    name: ClassVar[str] = "exponential"
    rate: float

    @staticmethod
    def _scipy(rate):
        from scipy import stats

        return stats.expon(scale=1.0 / rate)

    @staticmethod
    def _variates(rng, size, rate):
        return rng.standard_exponential(size) * (1.0 / rate)


@dataclass(frozen=True)
class Gamma(_ScipyLaw):
    name: ClassVar[str] = "gamma"
    shape: float
    scale: float

    @staticmethod
    def _scipy(shape, scale):
        from scipy import stats

        return stats.gamma(shape, scale=scale)

    @staticmethod
    def _variates(rng, size, shape, scale):
        return rng.standard_gamma(shape, size) * scale


def _padded(rows: Sequence[Sequence[float]], fill: float) -> np.ndarray:
    """Rows of different lengths as one table, the short ones padded with ``fill``."""
    width = max(len(row) for row in rows)
    return np.array([list(row) + [fill] * (width - len(row)) for row in rows], dtype=float)


def draw_categories(weights: Sequence[Sequence[float]], index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each entry of ``index``, a category drawn with the probabilities ``weights[index[j]]``.

    One uniform per entry against the cumulative weights (rows of any length), divided by their
    total (weights sum to 1 within a tolerance): a category of weight 0 is never drawn, nor padding.
    """
    cumulative = np.cumsum(_padded(weights, 0.0), axis=1)
    cumulative /= cumulative[:, -1:]
    last = np.array([len(row) - 1 for row in weights])
    uniform = rng.random(len(index))
    return np.minimum((uniform[:, None] >= cumulative[index]).sum(axis=1), last[index])


class _Mixture(Law):
    """A finite mixture: branch ``i`` with probability ``weights[i]``, then that branch's law.

    Subclasses name the per-branch parameter lists after ``weights`` and give the law of a branch,
    as a scipy law and as draws (``_ScipyLaw``'s two methods); lists are padded so that mixtures
    with different branch counts draw in one call.
    """

    weights: tuple[float, ...]

    @staticmethod
    def _branch(**parameters):
        raise NotImplementedError

    @staticmethod
    def _branch_variates(rng: np.random.Generator, size: int, **parameters) -> np.ndarray:
        raise NotImplementedError

    def _branch_parameters(self) -> dict[str, np.ndarray]:
        return {f.name: np.asarray(getattr(self, f.name))[:, None] for f in fields(self)[1:]}

    @property
    def n_parameters(self) -> int:
        return len(self.weights) * len(fields(self)) - 1

    def check(self, where: str) -> None:
        branches = len(self.weights)
        for f in fields(self):
            values = getattr(self, f.name)
            require(
                f"{where}.{f.name}",
                list(values),
                len(values) == branches,
                f"a list of {branches} numbers, one per weight",
            )
            for index, value in enumerate(values):
                if f.name == "weights":
                    require(f"{where}.weights[{index}]", value, 0.0 <= value <= 1.0, "in [0, 1]")
                else:
                    require(f"{where}.{f.name}[{index}]", value, value > 0.0, "> 0")
        total = math.fsum(self.weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ParameterError(f"{where}.weights must sum to 1 (got {total:.9g})")

    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        branches = self._branch(**self._branch_parameters()).cdf(x.reshape(1, -1))
        return (np.asarray(self.weights) @ branches).reshape(x.shape)

    def logpdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        branches = self._branch(**self._branch_parameters()).logpdf(x.reshape(1, -1))
        with np.errstate(divide="ignore"):
            log_weights = np.log(np.asarray(self.weights))[:, None]
        from scipy import special

        return special.logsumexp(branches + log_weights, axis=0).reshape(x.shape)

    def mean(self) -> float:
        return float(np.asarray(self.weights) @ self._branch(**self._branch_parameters()).mean().ravel())

    def median(self) -> float:
        quantiles = self._branch(**self._branch_parameters()).median().ravel()
        low, high = quantiles.min(), quantiles.max()
        if low == high:
            return float(low)
        from scipy import optimize

        return float(optimize.brentq(lambda x: float(self.cdf(x)) - 0.5, low, high, xtol=1e-12 * high))

    @classmethod
    def draw(cls, laws, index, rng):
        branch = draw_categories([law.weights for law in laws], index, rng)
        # Padded branches are never picked; the padding value only makes the table rectangular.
        parameters = {
            f.name: _padded([getattr(law, f.name) for law in laws], 1.0)[index, branch] for f in fields(cls)[1:]
        }
        return cls._branch_variates(rng, len(index), **parameters)


@dataclass(frozen=True)
class HyperExponential(_Mixture):
    """Mixture of exponentials (Gaevoy et al., formulas 16-20): coefficient of variation >= 1."""

    name: ClassVar[str] = "hyperexponential"
    weights: tuple[float, ...]
    rates: tuple[float, ...]

    @staticmethod
    def _branch(rates):
        from scipy import stats

        return stats.expon(scale=1.0 / np.asarray(rates))

    @staticmethod
    def _branch_variates(rng, size, rates):
        return Exponential._variates(rng, size, np.asarray(rates))


@dataclass(frozen=True)
class HyperGamma(_Mixture):
    """Mixture of gamma laws (Gaevoy et al., formulas 31-35)."""

    name: ClassVar[str] = "hypergamma"
    weights: tuple[float, ...]
    shapes: tuple[float, ...]
    scales: tuple[float, ...]

    @staticmethod
    def _branch(shapes, scales):
        from scipy import stats

        return stats.gamma(shapes, scale=scales)

    @staticmethod
    def _branch_variates(rng, size, shapes, scales):
        return Gamma._variates(rng, size, shapes, scales)


@dataclass(frozen=True)
class Empirical(Law):
    """A discrete law: ``values[i]`` with probability ``weights[i]``, e.g. the widths of a log's
    jobs with their frequencies (Gaevoy et al.'s array of probabilities)."""

    name: ClassVar[str] = "empirical"
    values: tuple[float, ...]
    weights: tuple[float, ...]

    def check(self, where: str) -> None:
        require(
            f"{where}.weights",
            list(self.weights),
            len(self.weights) == len(self.values),
            f"a list of {len(self.values)} numbers, one per value",
        )
        require(f"{where}.values", list(self.values), len(set(self.values)) == len(self.values), "distinct")
        for index, weight in enumerate(self.weights):
            require(f"{where}.weights[{index}]", weight, 0.0 <= weight <= 1.0, "in [0, 1]")
        total = math.fsum(self.weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ParameterError(f"{where}.weights must sum to 1 (got {total:.9g})")

    def mean(self) -> float:
        return float(np.dot(self.values, self.weights))

    @classmethod
    def draw(cls, laws, index, rng):
        category = draw_categories([law.weights for law in laws], index, rng)
        return _padded([law.values for law in laws], 0.0)[index, category]


LAWS: dict[str, type[Law]] = {
    law.name: law for law in (LogNormal, Pareto, Lomax, Exponential, Gamma, HyperExponential, HyperGamma)
}


def law_from_mapping(raw: Any, where: str) -> Law:
    """The law a model file describes at ``where`` (e.g. ``classes[0].makespan``), validated."""
    raw = table(raw, where)
    name = raw.get("law")
    if name not in LAWS:
        raise ParameterError(f"{where}.law must be one of {', '.join(LAWS)} (got {name!r})")
    return LAWS[name].from_mapping(raw, where)


def draw_by_class(laws: Sequence[Law], class_index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One value per task, from the law of its class: one vectorized draw per kind of law.

    Kinds of law are drawn in the order they first appear among the classes, so that a model
    whose classes all use one kind draws exactly as a single call with per-task parameters.
    """
    values = np.empty(len(class_index))
    for kind in dict.fromkeys(type(law) for law in laws):
        members_classes = [i for i, law in enumerate(laws) if type(law) is kind]
        members = np.isin(class_index, members_classes)
        local = np.zeros(len(laws), dtype=np.intp)
        local[members_classes] = np.arange(len(members_classes))
        values[members] = kind.draw([laws[i] for i in members_classes], local[class_index[members]], rng)
    return values
