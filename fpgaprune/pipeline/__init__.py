"""The YAML-driven pipeline: schema.py (the config), checks.py, stages.py, runner.py (resumable stages)."""

from fpgaprune.pipeline.schema import ConfigError, RunConfig, load_config, parse_config

__all__ = ["ConfigError", "RunConfig", "load_config", "parse_config"]
