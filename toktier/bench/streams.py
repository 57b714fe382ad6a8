"""Real session texts at any size: trajectories rendered and concatenated, cut at message edges.

A *stream* is the rendered messages of consecutive trajectories (starting at a
chosen one) laid end to end; a context of N characters is its first messages
up to N, and the appends that follow are the stream's own next calls (an
assistant message plus the tool output that answers it), at their natural
sizes -- or fixed-length slices of the stream for the Δ sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..workload.templates import render_segments
from ..workload.trajectories import Trajectory, iter_trajectories


@dataclass
class Cell:
    """One session of a timing cell: a prefix and the appends that follow it."""

    prefix: str
    appends: list[str]


def load_trajectories(archive: Path, limit: int | None = None) -> list[Trajectory]:
    return list(iter_trajectories(archive, limit=limit))


def _segments(trajs: list[Trajectory], start: int, tokenizer_name: str):
    n = len(trajs)
    for k in range(n):
        yield from render_segments(trajs[(start + k) % n].messages, tokenizer_name)


def natural_cell(
    trajs, tokenizer_name: str, context_chars: int, n_appends: int, start: int
) -> Cell:
    """Prefix of about ``context_chars`` (ending at a message edge), then ``n_appends`` natural calls."""
    prefix_parts, size = [], 0
    segs = _segments(trajs, start, tokenizer_name)
    for seg in segs:
        if size >= context_chars:
            first_append = seg
            break
        prefix_parts.append(seg)
        size += len(seg)
    else:
        raise ValueError("not enough text in the corpus for this context size")
    appends, pending = [], [first_append]
    for seg in segs:
        pending.append(seg)
        if len(pending) == 2:  # one call: the model's message and the tool output that answers it
            appends.append("".join(pending))
            pending = []
            if len(appends) == n_appends:
                break
    return Cell("".join(prefix_parts), appends)


def sliced_cell(
    trajs, tokenizer_name: str, context_chars: int, delta_chars: int, n_appends: int, start: int
) -> Cell:
    """Prefix of exactly ``context_chars`` characters, then appends of exactly ``delta_chars``."""
    need = context_chars + delta_chars * n_appends
    parts, size = [], 0
    for seg in _segments(trajs, start, tokenizer_name):
        parts.append(seg)
        size += len(seg)
        if size >= need:
            break
    else:
        raise ValueError("not enough text in the corpus for this cell")
    text = "".join(parts)
    appends = [
        text[context_chars + i * delta_chars : context_chars + (i + 1) * delta_chars]
        for i in range(n_appends)
    ]
    return Cell(text[:context_chars], appends)


def stream_text(trajs, tokenizer_name: str, chars: int, start: int = 3) -> str:
    """The first ``chars`` characters of the stream that starts at trajectory ``start``."""
    parts, size = [], 0
    for seg in _segments(trajs, start, tokenizer_name):
        parts.append(seg)
        size += len(seg)
        if size >= chars:
            break
    return "".join(parts)[:chars]
