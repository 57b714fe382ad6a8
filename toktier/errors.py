"""Exceptions with messages that name the problem (the brief: bad input gets a clear error)."""

from __future__ import annotations


class ToktierError(Exception):
    """Base class of every toktier error."""


class UnknownTokenizerError(ToktierError, KeyError):
    def __init__(self, name: str, known: list[str]):
        self.name, self.known = name, known
        super().__init__(name)

    def __str__(self) -> str:
        return (
            f"unknown tokenizer {self.name!r}: not a registry name and not a path to a "
            f"tokenizer.json. Known names: {', '.join(self.known)}"
        )


class ArtifactError(ToktierError):
    """A pinned artifact could not be fetched, converted or verified."""


class ChecksumMismatchError(ArtifactError):
    def __init__(self, what: str, expected: str, actual: str):
        self.what, self.expected, self.actual = what, expected, actual
        super().__init__(
            f"sha256 mismatch for {what}: manifest pins {expected}, found {actual}. "
            "The file is corrupt or not the pinned version; delete it and rebuild "
            "(`toktier build`), or, if the pin itself must change, update the manifest on purpose."
        )


class TokenizerFileError(ToktierError):
    """A tokenizer.json is missing, unreadable or rejected by the reference engine."""


class TokenizerFileChangedError(TokenizerFileError):
    """The tokenizer.json on disk is no longer the one ``load()`` read (replaced or deleted)."""


class InvalidTextError(ToktierError, ValueError):
    """Text that no tokenizer can encode exactly (e.g. lone surrogates)."""


class UnknownSessionError(ToktierError, KeyError):
    """``append`` to a session that has no live state (never seen, closed, expired or evicted)."""

    def __init__(self, session: str):
        self.session = session
        super().__init__(session)

    def __str__(self) -> str:
        return (
            f"no live state for session {self.session!r} (never created, closed, expired or evicted); "
            "send the full text with Tier.encode(text, session=...) to start it again"
        )


class SessionTokenizerMismatchError(ToktierError):
    """A session's stored tokens were produced by another tokenizer; it is never repaired across."""


class WorkerStartError(ToktierError, RuntimeError):
    """A front-end worker process could not start, after bounded retries with back-off."""
