"""The multi-worker front end: exact on every route, session affinity, worker death, open loop."""

import os
import time

import numpy as np
import pytest

import toktier
from toktier import loadgen
from toktier.bench.streams import load_trajectories
from toktier.serving import Request, WorkerPool, affinity
from toktier.workload.archives import find_archive


@pytest.fixture(scope="module")
def setup():
    archive = find_archive("mini-swe-agent")
    if archive is None:
        pytest.skip("trajectory archive not available")
    trajs = load_trajectories(archive, limit=6)
    work = loadgen.build_workload(trajs, "llama3", max_context_chars=40_000)
    return trajs, work, toktier.load("llama3")


def _check(tok, work, req, done):
    assert done.error is None, done.error
    assert done.ids.tolist() == tok.reference(work.text(req.traj, req.call)), req


def test_tier_pool_is_exact_and_survives_a_killed_worker(setup):
    _, work, tok = setup
    src = loadgen.MixtureSource(work, live=6, start="random", seed=3)
    reqs = src.warm() + [src.next() for _ in range(30)]
    # delta_aware off: a large append may otherwise be encoded in full (a timing-based choice)
    # verify_cpu_share 0.5: the workers' tiers take their arguments from tier_kw
    kw = {"tier_kw": {"delta_aware": False, "verify_cpu_share": 0.5}}
    with WorkerPool(
        "tier", "llama3", work, workers=2, keep_ids=True, verify_rate=1.0, **kw
    ) as pool:
        paths = {}
        for r in reqs:  # closed loop, so the kill below happens between requests
            pool.submit(r)
            [d] = pool.results(1, 120)
            _check(tok, work, r, d)
            paths[r.rid] = (d.path, d.worker)
        conts = [r for r in reqs if r.kind == "cont"]
        assert conts and all(paths[r.rid][0] == "repair" for r in conts)
        assert all(paths[r.rid][1] == affinity(r.session, 2) for r in reqs)
        # kill worker 0: its sessions become misses, worker 1's sessions stay hits
        pool.kill(0)
        assert pool.check_workers() == [0] and pool.restarts == 1
        after = [src.next() for _ in range(16)]
        for r in after:
            pool.submit(r)
        done = {d.rid: d for d in pool.results(len(after), 180)}
        assert len(done) == len(after)
        seen = set()
        for r in after:
            d = done[r.rid]
            _check(tok, work, r, d)
            first = r.session not in seen
            seen.add(r.session)
            if r.kind == "cont" and affinity(r.session, 2) == 1:
                assert d.path == "repair"
            if r.kind == "cont" and affinity(r.session, 2) == 0 and first:
                assert d.path == "cpu"  # a miss after the restart, encoded in full
        stats = pool.stats()
        assert len(stats) == 2 and all(s["verifier"]["mismatches"] == 0 for s in stats)
        assert sum(s["verifier"]["checked"] for s in stats) > 0
        assert all(s["verifier"]["cpu_share"] == 0.5 for s in stats)


def test_open_loop_stateless_reference(setup):
    _, work, _ = setup
    src = loadgen.MixtureSource(work, live=4, seed=1)
    offs = loadgen.poisson_offsets(20.0, 1.0, seed=2)
    sched = [(float(o), src.next()) for o in offs]
    # two workers read one shared inbox pipe: each request reaches exactly one of them
    with WorkerPool("reference", "llama3", work, workers=2) as pool:
        cpu0 = pool.cpu_seconds()
        out = loadgen.run_open_loop(pool, sched, drain_s=60)
        assert pool.cpu_seconds() > cpu0  # the worker's encodes are counted
    assert out["done"].all() and out["errors"] == 0
    assert (out["sojourn_s"] >= out["service_s"]).all() and (out["service_s"] > 0).all()
    assert set(out["path"]) == {"reference"}
    assert set(out["worker"]) <= {0, 1}


def test_process_cpu_reads_proc_and_says_nan_for_a_gone_process():
    import math
    import os
    import sys

    from toktier.serving import process_cpu_s

    if not sys.platform.startswith("linux"):
        pytest.skip("/proc is Linux-only")
    before = process_cpu_s(os.getpid())
    sum(i * i for i in range(2_000_000))  # ~0.1 s of CPU
    assert process_cpu_s(os.getpid()) > before >= 0
    assert math.isnan(process_cpu_s(2**22 + 12345))  # above pid_max's default: no such process


def test_the_generator_never_polls_holding_the_gil():
    """``wait_until`` sleeps through most of a gap and yields (``sleep(0)``) on every poll
    of the rest: a poll that kept the GIL would stall the collector thread."""
    target = 100.0
    poll = loadgen.POLL_S
    times = iter([target - 0.01, target - 0.8 * poll, target - 0.3 * poll, target + 1e-6])
    sleeps = []
    loadgen.wait_until(target, clock=lambda: next(times), sleep=sleeps.append)
    assert sleeps == [pytest.approx(0.01 - poll), 0, 0]
    sleeps.clear()
    loadgen.wait_until(target, clock=lambda: target + 0.5, sleep=sleeps.append)  # late: at once
    assert sleeps == []


def test_the_generators_timer_slack_is_fine_inside_and_restored_after():
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("prctl timer slack is Linux-only")
    libc = ctypes.CDLL(None)
    before = libc.prctl(30, 0, 0, 0, 0)
    with loadgen.fine_timer() as ok:
        assert ok and libc.prctl(30, 0, 0, 0, 0) == 1000
    assert libc.prctl(30, 0, 0, 0, 0) == before


def test_the_generator_pauses_its_garbage_collector_and_restores_it():
    import gc

    assert gc.isenabled()
    with loadgen.paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        with loadgen.paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), loadgen.paused_gc():  # restored on an error too
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_burst_schedule_and_mixture_shapes(setup):
    trajs, work, _ = setup
    sched = loadgen.burst_schedule(
        work, trajs, sessions=4, calls=5, window_s=0.5, compression=10.0, seed=0
    )
    offs = np.array([o for o, _ in sched])
    assert (np.diff(offs) >= 0).all()
    firsts = {}
    for _, r in sched:
        firsts.setdefault(r.session, r.kind)
    assert set(firsts.values()) == {"init"}
    assert 0 < loadgen.init_share(trajs) < 0.5
    with pytest.raises(ValueError, match="mode"):
        WorkerPool("nope", "llama3", work)
    assert isinstance(Request(1, "s", 0, 0, "init"), Request)


def test_a_worker_that_cannot_restart_is_given_up_loudly(setup, tmp_path):
    # Start on a user file, then corrupt it and kill the worker: every restart fails.
    from toktier.errors import WorkerStartError

    _, work, tok = setup
    path = tmp_path / "tokenizer.json"
    path.write_bytes(tok._raw)
    src = loadgen.MixtureSource(work, live=3, seed=5)
    with WorkerPool("tier", str(path), work, workers=1, verify_rate=0.0, keep_ids=True) as pool:
        r = src.next()
        pool.submit(r)
        [d] = pool.results(1, 120)
        _check(tok, work, r, d)
        path.write_text("{ not a tokenizer", encoding="utf-8")
        pool.kill(0)
        reqs = [src.next() for _ in range(4)]
        for r in reqs:
            pool.submit(r)
        t0 = time.monotonic()
        with pytest.raises(WorkerStartError, match="failed to start 3 times"):
            pool.results(len(reqs), 120)
        assert time.monotonic() - t0 < 60 and pool.restarts == 3  # bounded, backed off
        answered = pool.results(len(reqs), 5)  # none lost: answered with the worker's error
        assert sorted(d.rid for d in answered) == sorted(r.rid for r in reqs)
        assert all("not a valid tokenizer.json" in d.error for d in answered)
        assert pool.pending() == 0
        with pytest.raises(WorkerStartError):
            pool.submit(src.next())


def test_submit_validates_the_session_id_before_counting_it(setup):
    _, work, _ = setup
    with WorkerPool("reference", "llama3", work, workers=1) as pool:
        with pytest.raises(ValueError, match="UTF-8"):
            pool.submit(Request(1, "bad\ud800", 0, 0, "init"))
        with pytest.raises(TypeError, match="session id"):
            pool.submit(Request(2, None, 0, 0, "init"))
        with pytest.raises(ValueError, match="request kind"):
            pool.submit(Request(3, "s", 0, 0, "resume"))
        assert pool.pending() == 0


def test_a_short_soak_churns_kills_and_stays_exact(setup):
    from toktier.bench import soak

    trajs, _, _ = setup
    run = soak.soak(
        trajs, "llama3", duration_s=8.0, rate=25.0, workers=2, live=6, ttl_s=2.0,
        max_bytes=4 << 20, verify_rate=0.5, edit_share=0.2, close_share=0.1, probe_s=1.0,
        max_context_chars=40_000, progress=False,
    )  # fmt: skip
    req = run["requests"]
    assert req["done"] == req["sent"] > 100 and req["errors"] == 0
    assert req["edit"] > 0 and req["close"] > 0
    assert run["killed_at_s"] is not None and run["restarts"] == 1
    assert run["verifier"]["checked"] > 0 and run["verifier"]["mismatches"] == 0
    assert {p["worker"] for p in run["probes"]} == {0, 1}
    assert run["verdict"]["state_under_budget"] and run["verdict"]["mismatches"] == 0
    assert sum(s["expired"] + s["closed"] for s in run["final_stats"]) > 0


@pytest.mark.parametrize("mode", ["fastokens", "reference"])
def test_stateless_answers_convert_ids_only_when_kept(setup, mode):
    """A stateless worker answers with the encoder's own ID list (its length) in a capacity
    run, and with the reference's IDs as a uint32 array when results are kept: the array
    conversion cost fastokens twice its encode, so it stays out of the timed path."""
    from toktier.serving import _serve_fn

    _, work, tok = setup
    serve, _, _, _ = _serve_fn(mode, "llama3", 0.0, {})
    text = work.text(0, work.calls(0) - 1)
    want = tok.reference(text)
    n, path, ids = serve("s", text, False)
    assert (n, path, ids) == (len(want), mode, None)
    n, path, ids = serve("s", text, True)
    assert n == len(want) and path == mode
    assert isinstance(ids, np.ndarray) and ids.dtype == np.uint32 and ids.tolist() == want


def test_the_null_front_end_answers_every_request_through_the_pool_with_no_ids(setup):
    """``"null"`` is the harness alone (experiment 09's floor): every request reaches one
    worker, which makes its text and answers with no IDs on the plain-answer path."""
    _, work, _ = setup
    src = loadgen.MixtureSource(work, live=4, seed=3)
    sched = [(float(o), src.next()) for o in loadgen.poisson_offsets(200.0, 0.5, seed=4)]
    with WorkerPool("null", "llama3", work, workers=2) as pool:
        out = loadgen.run_open_loop(pool, sched, drain_s=30)
        for _, req in sched[:5]:
            pool.submit(req)
        done = pool.results(5, timeout=30)
    assert out["done"].all() and out["errors"] == 0 and len(out["path"]) == len(sched)
    assert set(out["path"]) == {"null"}
    assert sorted(d.rid for d in done) == sorted(r.rid for _, r in sched[:5])
    assert all(d.n_ids == 0 and d.path == "null" and d.error is None for d in done)


def test_unknown_modes_are_refused_with_the_known_ones(setup):
    _, work, _ = setup
    with pytest.raises(ValueError, match="null"):
        WorkerPool("nothing", "llama3", work, workers=1)


def _allowed_cpus(status_path: str) -> set[int]:
    """A task's ``Cpus_allowed_list`` (``0-1,3``) from ``/proc/.../status``, as a set."""
    with open(status_path, encoding="ascii") as f:
        spec = next(line for line in f if line.startswith("Cpus_allowed_list:")).split(":")[1]
    out: set[int] = set()
    for part in spec.strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")
def test_pinned_workers_hold_only_their_serving_thread_to_one_core(setup):
    """``pin_cores``: each worker's serving thread runs on its own core from the second
    on; the threads it started before (the shadow verifier among them) keep every core,
    and answers stay exact."""
    _, work, tok = setup
    every = os.sched_getaffinity(0)
    cores = sorted(every)
    with WorkerPool("tier", "llama3", work, workers=2, verify_rate=0.5, keep_ids=True,
                    pin_cores=True) as pool:  # fmt: skip
        assert pool.pins == [cores[1 % len(cores)], cores[2 % len(cores)]]
        reqs = [Request(i, f"p{i}", i % 3, 1, "init") for i in range(4)]
        for req in reqs:
            pool.submit(req)
        for done in pool.results(len(reqs), timeout=120):
            _check(tok, work, reqs[done.rid], done)
        for slot, proc in enumerate(pool._procs):
            assert _allowed_cpus(f"/proc/{proc.pid}/status") == {pool.pins[slot]}
            # the shadow verifier, the engine's pool, the binding's threads: all started
            # before the pin, and none of them is held
            others = [t for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
            assert others
            assert all(_allowed_cpus(f"/proc/{proc.pid}/task/{t}/status") == every
                       for t in others)  # fmt: skip
    with WorkerPool("null", "llama3", work, workers=1) as pool:
        assert pool.pins == [None]
        assert _allowed_cpus(f"/proc/{pool._procs[0].pid}/status") == every
