"""Real-session replay: every model call of every trajectory, as a front end would send it.

Each session is rendered through the tokenizer's chat template (role markers
are its own added tokens), and every call's full prompt is sent to
``Tier.encode(prompt, session=...)``; the IDs are compared with the reference
on the full prompt, and the spans every ``span_every`` calls.  Per splice it
records the outcome, widenings, window size and append size, which
``04-repair-behavior`` plots.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from ..tier import Tier
from ..workload.templates import render_segments
from ..workload.trajectories import Trajectory


@dataclass
class ReplayReport:
    tokenizer: str
    family: str
    sessions: int = 0
    calls: int = 0
    characters: int = 0  # total prompt characters compared
    outcomes: Counter = field(default_factory=Counter)
    mismatches: int = 0
    span_checks: int = 0
    span_mismatches: int = 0
    first_mismatch: dict | None = None
    splices: list = field(
        default_factory=list
    )  # (session, call, delta_chars, context_chars, widenings, path)

    def to_dict(self, with_splices: bool = False) -> dict:
        d = {
            "tokenizer": self.tokenizer,
            "family": self.family,
            "sessions": self.sessions,
            "calls": self.calls,
            "characters": self.characters,
            "outcomes": dict(self.outcomes),
            "mismatches": self.mismatches,
            "span_checks": self.span_checks,
            "span_mismatches": self.span_mismatches,
            "first_mismatch": self.first_mismatch,
        }
        if with_splices:
            d["splices"] = self.splices
        return d


def replay(
    tok, trajectories: list[Trajectory], *, span_every: int = 10, progress: bool = True
) -> ReplayReport:
    report = ReplayReport(tok.name, tok.family)
    # The campaign checks every request itself (no verifier) and certifies repair on every
    # continuation (no delta-aware full encodes, whose choice depends on this machine's speed).
    tier = Tier(tok, verify_rate=0, delta_aware=False)
    for traj in tqdm(
        trajectories, desc=f"replay {tok.name}", unit="session", disable=not progress or None
    ):
        segs = render_segments(traj.messages, tok.name)
        report.sessions += 1
        prev_len = 0
        prompts, emitted = [], []
        spans: dict[int, np.ndarray] = {}  # call -> (n, 2) spans, checked after the batch
        for k, call in enumerate(traj.calls):
            prompt = "".join(segs[: call.prompt_messages])
            r = tier.encode(prompt, session=traj.session)
            report.calls += 1
            report.characters += len(prompt)
            report.outcomes[f"{r.path}: {r.reason.split(' (')[0]}"] += 1
            if r.path == "repair":
                report.splices.append(
                    (
                        traj.session,
                        k,
                        len(prompt) - prev_len,
                        len(prompt),
                        r.widenings,
                        r.window_chars,
                    )
                )
            prompts.append(prompt)
            emitted.append(r.ids)
            if k % span_every == 0:  # the session's spans as they stand after this call
                _, starts, ends = tier.session_records(traj.session)
                spans[k] = np.stack([starts, ends], axis=1).reshape(-1, 2)
            prev_len = len(prompt)
        # The reference on every full prompt, in one batch (the reference parallelizes it);
        # its offsets are the reference spans of the calls whose spans were kept.
        for k, enc in enumerate(tok.hf.encode_batch(prompts, add_special_tokens=False)):
            if not np.array_equal(emitted[k], np.asarray(enc.ids, dtype=np.uint32)):
                report.mismatches += 1
                if report.first_mismatch is None:
                    report.first_mismatch = {"session": traj.session, "call": k}
            if k in spans:
                want = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
                report.span_checks += 1
                if not np.array_equal(spans.pop(k), want):
                    report.span_mismatches += 1
        tier.close(traj.session)
    return report
