"""Errors a user sees: each renders as one clear paragraph, never a bare traceback."""


class CurateError(Exception):
    """Base class: the message is what the user reads."""

    exit_code = 1


class UsageError(CurateError):
    """The command line asks for something that cannot be (a missing argument, a run directory that is not
    one): exit code 2, as argparse's own usage errors."""

    exit_code = 2


class ConfigError(CurateError):
    """A pipeline file or a --set override is wrong: `FILE: key.path: what was expected`."""

    exit_code = 2

    def __init__(self, file: str, key: str, message: str):
        self.file, self.key, self.message = file, key, message
        where = "".join(f"{part}: " for part in (file, key) if part)
        super().__init__(where + message)

    def __reduce__(self):  # picklable, so it crosses from a Ray worker to the driver intact
        return (type(self), (self.file, self.key, self.message))


class StageError(CurateError):
    """Stage code failed on some input: names the stage, the input (file, line or row) and the cause."""

    def __init__(self, stage: str, where: str, cause: str):
        self.stage, self.where, self.cause = stage, where, cause
        super().__init__(f"stage '{stage}' failed on {where}: {cause}")

    def __reduce__(self):  # picklable, so it crosses from a Ray worker to the driver intact
        return (type(self), (self.stage, self.where, self.cause))


class BadShardError(StageError):
    """A shard is mostly garbage: more bad records than `max_bad_fraction` allows."""
