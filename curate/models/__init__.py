"""Models loaded once per worker process: language identification, quality and dual-use classifiers."""
