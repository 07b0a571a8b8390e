"""Generating workloads: draw tasks from a model and write them as a Batsim JSON workload, streamed."""
