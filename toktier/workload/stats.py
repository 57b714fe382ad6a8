"""Workload anatomy of replayable agent trajectories (paper §2, Fig. 2/14).

Per call: context N and append Δ in characters and in reference tokens, the
provider's reported prompt/cached tokens, and the gap to the previous call.
Token counts use the real chat-template rendering; each message segment is
tokenized once and prefix sums give every call's N (exact: segments are cut
by added tokens, see ``templates``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .templates import render_segments
from .trajectories import Trajectory


@dataclass
class CallTable:
    """Column arrays, one row per call (a dict of numpy arrays, easy to turn into a DataFrame)."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.columns)


def call_table(
    trajectories: Iterable[Trajectory], tokenizer=None, *, batch_size: int = 256
) -> CallTable:
    """One row per model call.  ``tokenizer``: a toktier Tokenizer for token columns (or None)."""
    cols: dict[str, list] = {
        k: []
        for k in (
            "session", "call", "n_chars", "delta_chars", "n_tokens", "delta_tokens", "first_call",
            "extends_previous", "created", "gap_s", "prompt_tokens", "cached_tokens", "completion_tokens",
        )
    }  # fmt: skip
    name = tokenizer.name if tokenizer is not None else "plain"
    for traj in trajectories:
        segs = render_segments(traj.messages, name)
        seg_chars = np.fromiter((len(s) for s in segs), dtype=np.int64, count=len(segs))
        char_prefix = np.concatenate([[0], np.cumsum(seg_chars)])
        if tokenizer is not None:
            counts = []
            for i in range(0, len(segs), batch_size):
                encs = tokenizer.hf.encode_batch(segs[i : i + batch_size], add_special_tokens=False)
                counts.extend(len(e.ids) for e in encs)
            tok_prefix = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])
        prev_end, prev_created = 0, None
        for k, call in enumerate(traj.calls):
            end = call.prompt_messages
            cols["session"].append(traj.session)
            cols["call"].append(k)
            cols["n_chars"].append(int(char_prefix[end]))
            cols["delta_chars"].append(int(char_prefix[end] - char_prefix[prev_end]))
            if tokenizer is not None:
                cols["n_tokens"].append(int(tok_prefix[end]))
                cols["delta_tokens"].append(int(tok_prefix[end] - tok_prefix[prev_end]))
            else:
                cols["n_tokens"].append(-1)
                cols["delta_tokens"].append(-1)
            cols["first_call"].append(k == 0)
            # A call reuses state iff its prompt extends the previous call's prompt.
            cols["extends_previous"].append(k > 0 and end >= prev_end)
            cols["created"].append(np.nan if call.created is None else call.created)
            cols["gap_s"].append(
                np.nan
                if (call.created is None or prev_created is None)
                else call.created - prev_created
            )
            cols["prompt_tokens"].append(-1 if call.prompt_tokens is None else call.prompt_tokens)
            cols["cached_tokens"].append(-1 if call.cached_tokens is None else call.cached_tokens)
            cols["completion_tokens"].append(
                -1 if call.completion_tokens is None else call.completion_tokens
            )
            prev_end, prev_created = end, call.created
    arrays = {k: np.asarray(v) for k, v in cols.items()}
    return CallTable(arrays)


def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q)) if len(x) else float("nan")


def summarize(table: CallTable, ttls_s: tuple[float, ...] = (300.0, 3600.0)) -> dict:
    """The headline numbers of the workload anatomy."""
    c = table.columns
    n = len(table)
    cont = ~c["first_call"]
    sessions, calls_per_session = np.unique(c["session"], return_counts=True)
    gaps = c["gap_s"][np.isfinite(c["gap_s"])]
    has_usage = (c["prompt_tokens"] > 0) & (c["cached_tokens"] >= 0)
    pt, ct = c["prompt_tokens"][has_usage], c["cached_tokens"][has_usage]
    hit = ct / pt
    out = {
        "sessions": len(sessions),
        "calls": n,
        "calls_per_session_median": _q(calls_per_session, 0.5),
        "calls_per_session_p90": _q(calls_per_session, 0.9),
        "share_no_reusable_prefix": float(np.mean(~c["extends_previous"])) if n else float("nan"),
        "delta_chars_median": _q(c["delta_chars"][cont], 0.5),
        "delta_chars_p90": _q(c["delta_chars"][cont], 0.9),
        "n_chars_median": _q(c["n_chars"], 0.5),
        "n_chars_p90": _q(c["n_chars"], 0.9),
        "n_chars_max": float(c["n_chars"].max()) if n else float("nan"),
        "first_call_chars_median": _q(c["n_chars"][~cont], 0.5),
        "amplification_median": _q(c["n_chars"][cont] / np.maximum(c["delta_chars"][cont], 1), 0.5),
        "amplification_token_weighted": float(
            c["n_chars"][cont].sum() / max(c["delta_chars"][cont].sum(), 1)
        ),
        "gap_s_median": _q(gaps, 0.5),
        "gap_s_p90": _q(gaps, 0.9),
        "provider_hit_ratio_median": _q(hit, 0.5),
        "provider_hit_ratio_token_weighted": float(ct.sum() / pt.sum())
        if len(pt)
        else float("nan"),
        "provider_share_calls_hit_gt_0.9": float(np.mean(hit > 0.9)) if len(hit) else float("nan"),
    }
    for ttl in ttls_s:
        out[f"share_gaps_over_{int(ttl)}s"] = (
            float(np.mean(gaps > ttl)) if len(gaps) else float("nan")
        )
    if (c["n_tokens"] >= 0).all() and n:
        out["delta_tokens_median"] = _q(c["delta_tokens"][cont], 0.5)
        out["delta_tokens_p90"] = _q(c["delta_tokens"][cont], 0.9)
        out["n_tokens_median"] = _q(c["n_tokens"], 0.5)
        out["n_tokens_max"] = float(c["n_tokens"].max())
        out["chars_per_token"] = float(c["n_chars"].sum() / max(c["n_tokens"].sum(), 1))
    return out


def ttl_hit_share(table: CallTable, ttls_s) -> list[dict]:
    """Share of calls that find live session state if state lives ``ttl`` seconds after last use.

    A session's first call always misses; a later call hits when the gap since the
    previous call is at most the TTL (state is refreshed at every call).
    """
    c = table.columns
    gaps = c["gap_s"]
    first = c["first_call"]
    n = len(table)
    out = []
    for ttl in ttls_s:
        hit = (~first) & np.isfinite(gaps) & (gaps <= ttl)
        out.append({"ttl_s": float(ttl), "hit_share": float(hit.sum() / n) if n else float("nan")})
    return out
