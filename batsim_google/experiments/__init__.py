"""Experiments: campaigns of simulations compared by their metrics, and validation by simulation."""
