"""curate: staged Ray pipelines that turn open web datasets into a clean, deduplicated training mixture."""

__version__ = "0.1.0"
