"""Sweeps: a grid of runs (grid.py), run on Ray and resumable (trials.py, sweep.py), each distinct run once
(twins.py), tabled and plotted (results.py)."""

from fpgaprune.sweep.grid import NAMED_AXES, Point, SweepError, parse_grid, point_config, points
from fpgaprune.sweep.sweep import run_sweep

__all__ = ["NAMED_AXES", "Point", "SweepError", "parse_grid", "point_config", "points", "run_sweep"]
