"""toktier: exact, stateful tokenization for agentic LLM serving.

The one contract: for every registered tokenizer T and text S, the IDs toktier
emits equal ``tokenizers.Tokenizer.from_file(T).encode(S, add_special_tokens=False).ids``.
"""

from .errors import (
    ArtifactError,
    ChecksumMismatchError,
    InvalidTextError,
    SessionTokenizerMismatchError,
    TokenizerFileError,
    ToktierError,
    UnknownSessionError,
    UnknownTokenizerError,
)
from .registry import Tokenizer, known, load
from .store import SessionStore
from .tier import Result, Tier

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "ChecksumMismatchError",
    "InvalidTextError",
    "Result",
    "SessionStore",
    "SessionTokenizerMismatchError",
    "Tier",
    "Tokenizer",
    "TokenizerFileError",
    "ToktierError",
    "UnknownSessionError",
    "UnknownTokenizerError",
    "__version__",
    "known",
    "load",
]
