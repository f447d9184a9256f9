"""Errors a user can cause. The CLI prints them as one line and exits non-zero."""


class VcError(Exception):
    """Base class: the message is complete and meant for the user."""


class ConfigError(VcError):
    pass


class AudioError(VcError):
    pass


class AudioTooLong(AudioError):
    """A recording longer than the limit of the step reading it (`vc serve` answers it with a 413)."""


class CheckpointError(VcError):
    pass


class DataError(VcError):
    pass


class OutputExistsError(VcError):
    """An output would replace an existing file and --overwrite was not given."""


class MissingPackageError(VcError):
    """An optional package this step needs is not installed (the message says how to get it)."""


class WriteError(VcError):
    """An output could not be written (a full disk, a read-only file system, no permission, ...)."""


class TrainingError(VcError):
    """Training cannot go on (its loss or gradients stopped being finite); the message says what is left."""
