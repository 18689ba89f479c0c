"""Pipeline configuration: YAML in, a validated `Pipeline` out."""

from curate.config.pipeline import Pipeline, Source, StageConfig, load_pipeline

__all__ = ["Pipeline", "Source", "StageConfig", "load_pipeline"]
