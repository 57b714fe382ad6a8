"""mini-swe-agent trajectories: sessions, messages and the calls that replay them exactly.

The message list of a trajectory is append-only: the prompt of the k-th model
call is exactly ``messages[:i_k]`` where ``i_k`` is the index of the k-th
assistant message.  Each assistant message carries the provider's response
metadata (``created`` time and token usage, including cached tokens).
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    reasoning: str = ""  # the model's reasoning summary for an assistant turn, when recorded


@dataclass(frozen=True)
class Call:
    """One model call: its prompt is ``messages[:prompt_messages]``."""

    prompt_messages: int
    created: float | None
    prompt_tokens: int | None
    cached_tokens: int | None
    completion_tokens: int | None


@dataclass(frozen=True)
class Trajectory:
    session: str
    messages: tuple[Message, ...]
    calls: tuple[Call, ...]


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def parse_trajectory(doc: dict, session: str | None = None) -> Trajectory:
    raw = doc.get("messages")
    if not isinstance(raw, list):
        raise ValueError("trajectory has no 'messages' list")
    messages, calls = [], []
    for i, m in enumerate(raw):
        role = m.get("role", "")
        resp = (((m.get("extra") or {}).get("response")) or {}) if role == "assistant" else {}
        choice = (resp.get("choices") or [{}])[0] if isinstance(resp.get("choices"), list) else {}
        reasoning = ((choice or {}).get("message") or {}).get("reasoning")
        messages.append(Message(role, _content_text(m.get("content")),
                                reasoning if isinstance(reasoning, str) else ""))  # fmt: skip
        if role == "assistant":
            usage = resp.get("usage") or {}
            details = usage.get("prompt_tokens_details") or {}
            calls.append(
                Call(
                    prompt_messages=i,
                    created=float(resp["created"]) if resp.get("created") is not None else None,
                    prompt_tokens=usage.get("prompt_tokens"),
                    cached_tokens=details.get("cached_tokens"),
                    completion_tokens=usage.get("completion_tokens"),
                )
            )
    return Trajectory(session or doc.get("instance_id", ""), tuple(messages), tuple(calls))


def iter_trajectories(archive: Path, limit: int | None = None) -> Iterator[Trajectory]:
    """Trajectories from the tar.xz archive, in sorted session order, read without unpacking."""
    with tarfile.open(archive, "r:xz") as tf:
        members = sorted(
            (m for m in tf.getmembers() if m.isfile() and m.name.endswith(".traj.json")),
            key=lambda m: m.name,
        )
        for n, member in enumerate(members):
            if limit is not None and n >= limit:
                return
            f = tf.extractfile(member)
            if f is None:
                continue
            doc = json.load(f)
            yield parse_trajectory(doc, Path(member.name).name.removesuffix(".traj.json"))
