"""The Tokenizer: one pinned tokenizer.json, its reference engine, its family and probed facts."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import tokenizers

from . import artifacts
from .convert import CHAR_TO_BYTE
from .errors import TokenizerFileChangedError, TokenizerFileError, UnknownTokenizerError
from .families import classify
from .families.classes import ClassTable, load_or_probe, probe_key
from .textcheck import check_text

REFERENCE_VERSION = tokenizers.__version__


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool
    normalized: bool
    lstrip: bool
    rstrip: bool
    single_word: bool


def _token_chars(token: str, model_type: str) -> int:
    """How many characters of the text one vocabulary entry can cover.

    Byte-level tokens are byte strings that may cut a character; a token
    touches one character per UTF-8 lead byte, plus one if it starts inside
    a character.  WordPiece continuation tokens drop their ``##``.
    """
    if model_type == "BPE":
        try:
            raw = bytes(CHAR_TO_BYTE[c] for c in token)
        except KeyError:  # not a byte-level vocabulary: count characters
            return len(token)
        leads = sum(1 for b in raw if b & 0xC0 != 0x80)
        return leads + (1 if raw and raw[0] & 0xC0 == 0x80 else 0)
    if model_type == "WordPiece" and token.startswith("##"):
        return len(token) - 2
    return len(token)


def reference_added_tokens(hf: tokenizers.Tokenizer) -> tuple[AddedToken, ...]:
    """The added tokens as the reference holds them, by id.

    Not the file's ``added_tokens`` list: the reference gives a literal that is already
    a vocabulary entry that entry's id, and numbers a new literal after the vocabulary
    whatever id the file wrote (issue #13: an engine that trusted the file's ids emitted
    ids the reference never does).
    """
    return tuple(
        AddedToken(
            id=int(i),
            content=str(t.content),
            special=bool(t.special),
            normalized=bool(t.normalized),
            lstrip=bool(t.lstrip),
            rstrip=bool(t.rstrip),
            single_word=bool(t.single_word),
        )
        for i, t in sorted(hf.get_added_tokens_decoder().items())
    )


class Tokenizer:
    """A registered (or user-supplied) tokenizer.  ``reference`` is the ground truth.

    Everything (reference, engine tables, probes) is built from the one read of the file
    whose sha256 is ``sha256``; the file is not read again (``document``, ``checked_path``).
    """

    def __init__(
        self, name: str, path: Path, sha256: str, doc: dict, hf: tokenizers.Tokenizer, raw: bytes
    ):
        self.name = name
        self.path = path
        self.sha256 = sha256
        self._raw = raw
        self.reference_version = REFERENCE_VERSION
        self._hf = hf
        self._model_type = (doc.get("model") or {}).get("type", "")
        self._vocab_size = hf.get_vocab_size(with_added_tokens=True)
        self.added_tokens = reference_added_tokens(hf)
        family, why = classify(doc)
        if any(t.lstrip or t.rstrip or t.single_word for t in self.added_tokens):
            # matching we do not model, whatever the file says
            family, why = "unsupported", "added tokens with lstrip/rstrip/single_word"
        self.family = family
        self.unsupported_reason = why  # "" unless the family is "unsupported"
        self._probe_key = probe_key(doc, family)
        self._classes_lock = threading.Lock()

    def document(self) -> dict:
        """The tokenizer.json document, parsed from the bytes ``load()`` hashed (no disk read)."""
        return json.loads(self._raw.decode("utf-8"))

    def checked_path(self) -> str:
        """The file's path, for libraries that only open files (baselines), after checking
        that it still holds the bytes ``load()`` read.

        Raises ``TokenizerFileChangedError`` when the file was deleted or replaced.
        """
        try:
            now = self.path.read_bytes()
        except OSError as exc:
            raise TokenizerFileChangedError(
                f"{self.path} was loaded as {self.name!r} but can no longer be read ({exc}); "
                "load it again"
            ) from None
        sha = artifacts.sha256_bytes(now)
        if sha != self.sha256:
            raise TokenizerFileChangedError(
                f"{self.path} changed on disk since it was loaded as {self.name!r} "
                f"(sha256 {self.sha256[:12]}… then, {sha[:12]}… now); load it again"
            )
        return str(self.path)

    def __repr__(self) -> str:
        return f"Tokenizer(name={self.name!r}, family={self.family!r}, sha256={self.sha256[:12]}…)"

    # --- the reference -------------------------------------------------------------
    @property
    def hf(self) -> tokenizers.Tokenizer:
        """The reference engine (HF ``tokenizers``, pinned)."""
        return self._hf

    def reference(self, text: str) -> list[int]:
        """The reference IDs: ``Tokenizer.from_file(path).encode(text, add_special_tokens=False).ids``."""
        return self._hf.encode(check_text(text), add_special_tokens=False).ids

    def reference_encoding(self, text: str) -> tokenizers.Encoding:
        """The reference ``Encoding`` (IDs with character offsets), for spans and campaigns."""
        return self._hf.encode(check_text(text), add_special_tokens=False)

    def encode(self, text: str) -> np.ndarray:
        """Exact stateless tokenization as a uint32 array.

        The certified numba engine where the family has one (all cores for long
        texts), the reference otherwise; both give the reference's IDs.
        """
        eng = self.engine
        if eng is None:
            return np.asarray(self.reference(text), dtype=np.uint32)
        return eng.encode_ids(text)  # validates the text

    @property
    def engine(self):
        """The shared ``CpuEngine`` of this tokenizer, or None when it stays on the reference."""
        from .engine.cpu import engine_for

        return engine_for(self)

    # --- probed facts ----------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @cached_property
    def longest_token_chars(self) -> int:
        """Most characters any vocabulary entry (added tokens excluded) can cover."""
        vocab = self._hf.get_vocab(with_added_tokens=False)
        added = {t.content for t in self.added_tokens}
        return max((_token_chars(t, self._model_type) for t in vocab if t not in added), default=0)

    @cached_property
    def longest_added_chars(self) -> int:
        return max((len(t.content) for t in self.added_tokens), default=0)

    @property
    def class_table(self) -> ClassTable:
        """Per-code-point classes probed from this reference engine (cached on disk)."""
        with self._classes_lock:
            if "_classes" not in self.__dict__:
                self.__dict__["_classes"] = load_or_probe(
                    self._probe_key, self._hf, REFERENCE_VERSION, self.family
                )
            return self.__dict__["_classes"]


_LOADED: dict[tuple[str, str], Tokenizer] = {}
_LOAD_LOCK = threading.Lock()


def _open(name: str, path: Path, expected_sha: str | None) -> Tokenizer:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TokenizerFileError(f"tokenizer file not found: {path}") from None
    except OSError as exc:
        raise TokenizerFileError(f"cannot read tokenizer file {path}: {exc}") from None
    sha = artifacts.sha256_bytes(raw)
    if expected_sha is not None and sha != expected_sha:
        from .errors import ChecksumMismatchError

        raise ChecksumMismatchError(f"{name} tokenizer at {path}", expected_sha, sha)
    key = (str(path.resolve()), sha)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text)
        if not isinstance(doc, dict) or "model" not in doc:
            raise ValueError("not a tokenizer.json document (no 'model')")
        hf = tokenizers.Tokenizer.from_str(text)
    except Exception as exc:
        raise TokenizerFileError(f"{path} is not a valid tokenizer.json: {exc}") from None
    tok = Tokenizer(name, path, sha, doc, hf, raw)
    with _LOAD_LOCK:
        return _LOADED.setdefault(key, tok)


def load(name_or_path: str | Path) -> Tokenizer:
    """A registry name (built from its pinned artifact on first use) or a path to a tokenizer.json."""
    if isinstance(name_or_path, str) and name_or_path in artifacts.registry_names():
        path = artifacts.build(name_or_path)
        return _open(name_or_path, path, artifacts.entry(name_or_path)["tokenizer_sha256"])
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(
            f"load() takes a registry name or a path, got {type(name_or_path).__name__}"
        )
    path = Path(name_or_path)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        if (
            isinstance(name_or_path, str)
            and "/" not in name_or_path
            and not name_or_path.endswith(".json")
        ):
            raise UnknownTokenizerError(name_or_path, artifacts.registry_names())
        raise TokenizerFileError(f"tokenizer file not found: {path}")
    name = path.parent.name if path.name == "tokenizer.json" else path.stem
    return _open(name, path, None)


def known() -> list[str]:
    return artifacts.registry_names()
