"""Offline sample corpus: four web datasets in their native formats, with
planted duplicates, junk and bad records, plus the ground truth for tests."""

from .corpus import is_complete
from .make import make_sample

__all__ = ["make_sample", "is_complete"]
