"""Fitting a workload model to data (the Google trace, SWF logs, Batsim workloads), with its report."""
