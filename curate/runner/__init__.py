"""Running a pipeline: the run directory, task execution on Ray or inline, progress and the summary."""
