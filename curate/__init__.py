"""curate: staged Ray pipelines that turn open web datasets into a clean, deduplicated training mixture.

    import curate
    pipeline = curate.load_pipeline("pipelines/zyda2.yaml", ["stages.mix.seed=1"])
    rows = curate.run_pipeline(pipeline, "runs/zyda2")
"""

from curate._version import __version__

__all__ = ["__version__", "load_pipeline", "run_pipeline"]


def load_pipeline(path, overrides: list[str] | None = None):
    """A validated pipeline file, checked against every registered stage."""
    from curate.config.pipeline import load_pipeline as load
    from curate.stages import STAGES

    return load(path, overrides, STAGES)


def run_pipeline(pipeline, output: str, **options):
    """Make the quickstart corpus if the pipeline reads it, then run (or resume) the pipeline into `output`;
    see `curate.runner.run.run_pipeline` for the options."""
    from curate.runner.run import run_pipeline as run
    from curate.sample.quickstart import ensure_sample

    ensure_sample(pipeline.sample, pipeline.uses_sample)

    return run(pipeline, output, **options)
