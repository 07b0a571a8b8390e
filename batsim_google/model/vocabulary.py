"""The names and figures the model's options are declared with, importable without numpy or scipy.

The command line declares its choices and defaults with them at start-up; the modules that
do the work (presets, widths, priorities) use the same names.
"""

from __future__ import annotations

from typing import Literal

#: The models of the paper, and the 2011 cell as fitted from the trace, by name
#: (:mod:`batsim_google.model.presets`).
PRESET_NAMES = ("google", "kmeans-2", "kmeans-4", "google-2011-cell")
#: How parallel jobs' widths are grouped for their makespan laws (:mod:`batsim_google.model.widths`).
Grouping = Literal["width", "pow2"]
GROUPINGS: tuple[Grouping, ...] = ("width", "pow2")
#: Google's integer priorities, 0-11.
GOOGLE_PRIORITY_LEVELS = 12
