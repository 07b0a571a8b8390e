"""Automatic classification of tasks by k-means (Da Costa et al. 2018, Section 5).

Tasks are described by their makespan, priority and scheduling class (when the input has one),
each standardized to mean 0 and standard deviation 1 so that no unit dominates. For each k the
report gives the inertia and the mean distance to the closest centroid (the paper's Fig. 12, for
the elbow method) and the mean silhouette, computed on a seeded random sample of the tasks since
it costs the square of their number. A clustering is described per cluster as in the paper's
Tables 8 and 9: centroid makespan, priority and scheduling class (cluster means in the input's
units), frequency and disparity (mean / median makespan); clusters are numbered by increasing
centroid makespan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_samples
from sklearn.preprocessing import StandardScaler

from batsim_google.errors import ParameterError
from batsim_google.fitting.table import TaskTable

K_RANGE = range(2, 11)
#: Tasks on which silhouettes are computed (all of them below that).
SILHOUETTE_SAMPLE = 5_000
#: k-means restarts from different seeded centroids; the best inertia is kept.
N_INIT = 4


@dataclass(frozen=True)
class KScore:
    k: int
    inertia: float
    mean_distance: float
    silhouette: float


@dataclass(frozen=True)
class Clustering:
    """A k-clustering: a label per task, the per-cluster table and a silhouette sample."""

    k: int
    labels: np.ndarray
    clusters: pl.DataFrame
    silhouette: float
    sample_silhouettes: np.ndarray
    sample_labels: np.ndarray


def feature_names(table: TaskTable) -> list[str]:
    priority = "google_priority" if table.google_priorities else "priority"
    return ["makespan", priority] + (["scheduling_class"] if table.has_scheduling_class else [])


def _standardized(table: TaskTable) -> np.ndarray:
    return StandardScaler().fit_transform(table.frame.select(feature_names(table)).to_numpy().astype(float))


def _kmeans(features: np.ndarray, k: int, seed: int) -> KMeans:
    if len(features) < k:
        raise ParameterError(f"k-means with k = {k} needs at least {k} tasks (got {len(features)})")
    return KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit(features)


def _silhouettes(features: np.ndarray, labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(len(features), size=min(SILHOUETTE_SAMPLE, len(features)), replace=False))
    if len(np.unique(labels[sample])) < 2:
        return np.zeros(len(sample)), labels[sample]
    return silhouette_samples(features[sample], labels[sample]), labels[sample]


def elbow(table: TaskTable, seed: int, ks: Iterable[int] = K_RANGE) -> list[KScore]:
    """Inertia, mean distance to the closest centroid and mean silhouette for each k."""
    features = _standardized(table)
    scores = []
    for k in ks:
        if k > len(np.unique(features, axis=0)):
            break
        model = _kmeans(features, k, seed)
        silhouettes, _ = _silhouettes(features, model.labels_, seed)
        distance = float(model.transform(features).min(axis=1).mean())
        scores.append(KScore(k, float(model.inertia_), distance, float(silhouettes.mean())))
    return scores


def cluster(table: TaskTable, k: int, seed: int) -> Clustering:
    """The k-clustering of the tasks, described per cluster (see the module docstring)."""
    features = _standardized(table)
    distinct = len(np.unique(features, axis=0))
    if distinct < k:
        raise ParameterError(f"k-means with k = {k} needs at least {k} distinct tasks (got {distinct})")
    model = _kmeans(features, k, seed)
    frame = table.frame.with_columns(pl.Series("cluster", model.labels_))
    means = frame.group_by("cluster").agg(pl.col("makespan").mean().alias("centroid_makespan"))
    order = means.sort("centroid_makespan")["cluster"].to_list()
    relabel = np.empty(k, dtype=np.int64)
    relabel[order] = np.arange(k)
    labels = relabel[model.labels_]
    priority = feature_names(table)[1]
    summary = (
        table.frame.with_columns(pl.Series("cluster", labels))
        .group_by("cluster")
        .agg(
            pl.col("makespan").mean().alias("makespan"),
            pl.col(priority).mean().alias("priority"),
            *([pl.col("scheduling_class").mean().alias("scheduling_class")] if table.has_scheduling_class else []),
            (pl.len() / table.frame.height).alias("frequency"),
            (pl.col("makespan").mean() / pl.col("makespan").median()).alias("disparity"),
            (pl.col("kind") == "service").mean().alias("service_share"),
            pl.len().alias("tasks"),
        )
        .sort("cluster")
    )
    silhouettes, sample_labels = _silhouettes(features, labels, seed)
    return Clustering(k, labels, summary, float(silhouettes.mean()), silhouettes, sample_labels)
