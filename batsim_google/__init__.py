"""Google-like workloads, platforms and a production-cell scheduler for Batsim/SimGrid."""

__version__ = "0.1.0"
