"""Pipeline configuration: YAML in, a validated `Pipeline` out (the stage registry is passed in)."""

from curate.config.pipeline import Pipeline, Source, StageConfig, load_pipeline

__all__ = ["Pipeline", "Source", "StageConfig", "load_pipeline"]
