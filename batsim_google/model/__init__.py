"""The workload model: the paper's laws, its presets, priorities, arrival profiles, widths and request laws.

First room of the pipeline: everything here describes a workload; nothing reads a trace or talks to Batsim.
"""
