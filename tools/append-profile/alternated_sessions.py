"""Experiment 10's 48K session cells run through two or more tiers in turn (the A/B tools'
shared loop): each session seeded, one untimed append, the rest timed; which tier goes
first alternates from session to session.  Import it from a script in this folder.
"""

from toktier.bench.timing import time_ms


def alternated_appends(tiers: dict, cells, on_session=None) -> dict[str, list[float]]:
    """label -> the timed appends' ms over ``cells`` (``continuation.session_cells``);
    ``on_session(s, prefix, deltas, records)`` sees each session's final IDs per label."""
    times = {k: [] for k in tiers}
    for s, (prefix, deltas) in enumerate(cells):
        order = list(tiers.items())
        records = {}
        for label, tier in order[s % len(order) :] + order[: s % len(order)]:
            tier.close("x")
            tier.encode(prefix, session="x")
            tier.append("x", deltas[0])
            for d in deltas[1:]:
                times[label].append(time_ms(lambda d=d, tier=tier: tier.append("x", d)))
            records[label] = tier.session_records("x")[0]
        if on_session is not None:
            on_session(s, prefix, deltas, records)
    return times
