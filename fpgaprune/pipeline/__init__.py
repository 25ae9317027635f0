"""The YAML-driven pipeline: schema.py (the config), checks.py, stages.py (each stage, orchestrating), with
training.py, settings.py, pruning_policy.py and measurements.py beside it, and runner.py (resumable stages)."""

from fpgaprune.pipeline.schema import ConfigError, RunConfig, load_config, parse_config

__all__ = ["ConfigError", "RunConfig", "load_config", "parse_config"]
