"""``toktier`` command line: list tokenizers, encode text, build pinned artifacts, certify."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import artifacts
from .errors import ToktierError


def tokenizer_rows(names: list[str]) -> list[dict]:
    from .registry import load

    rows = []
    for name in names:
        tok = load(name)
        rows.append(
            {
                "name": tok.name,
                "family": tok.family,
                "vocab_size": tok.vocab_size,
                "added_tokens": len(tok.added_tokens),
                "longest_token_chars": tok.longest_token_chars,
                "longest_added_chars": tok.longest_added_chars,
                "sha256": tok.sha256,
                "route": _route(tok),
            }
        )
    return rows


def _route(tok) -> str:
    """How the tier serves this tokenizer (without building its engine)."""
    from .families import BYTE_LEVEL_FAMILIES

    if tok.family in BYTE_LEVEL_FAMILIES:
        return "engine + repair"
    if tok.family == "wordpiece":
        return "engine + repair (WordPiece rules)"
    if tok.family == "sentencepiece":
        from .families.stability import byte_fallback_chars

        if byte_fallback_chars(tok.document()).any():
            return "engine + repair (SentencePiece rules)"
        return "reference + repair (no byte fallback: no compiled engine)"
    return f"reference only: {tok.unsupported_reason}"


def _cmd_tokenizers(args) -> int:
    rows = tokenizer_rows(args.names or artifacts.registry_names())
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    head = ("name", "family", "vocab", "longest token", "sha256", "route")
    table = [
        (
            r["name"],
            r["family"],
            str(r["vocab_size"]),
            str(r["longest_token_chars"]),
            r["sha256"][:12],
            r["route"],
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)))
    return 0


def _cmd_encode(args) -> int:
    from .registry import load

    tok = load(args.tokenizer)
    if args.file in (None, "-"):
        text = sys.stdin.read()
    else:
        try:
            raw = Path(args.file).read_bytes()
        except OSError as exc:
            raise ToktierError(f"cannot read {args.file}: {exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToktierError(
                f"{args.file} is not valid UTF-8 (byte offset {exc.start})"
            ) from None
    ids = tok.encode(text)
    if args.json:
        print(json.dumps(ids.tolist()))
    else:
        print(" ".join(map(str, ids.tolist())))
    return 0


def _cmd_build(args) -> int:
    names = args.names or artifacts.registry_names()
    if args.record_pins:
        for name, sha in artifacts.record_pins(names).items():
            print(f"{name}: pinned {sha}")
        return 0
    for name in names:
        path = artifacts.build(name, force=args.force)
        print(f"{name}: {path} (sha256 verified)")
    return 0


def _cmd_certify_conversion(args) -> int:
    from .bench.machine import machine_facts
    from .campaigns import conversion

    results = conversion.certify_all(args.chars, seed=args.seed, names=args.names or None)
    for r in results:
        print(
            f"{r['tokenizer']}: {r['documents']} docs, {r['characters']:,} chars, {r['tokens']:,} tokens, "
            f"{r['vocab_entries_checked']:,} vocab entries -> {r['mismatches']} text / {r['vocab_mismatches']} vocab mismatches"
        )
    if args.out:
        _write_json(
            args.out,
            {"machine": machine_facts(), "chars_requested": args.chars, "results": results},
        )
    if args.table:
        fields = ["tokenizer", "documents", "characters", "tokens", "special_literals", "mismatches",
                  "vocab_entries_checked", "vocab_mismatches", "seconds"]  # fmt: skip
        _write_csv(args.table, results, fields)
    failed = sum(r["mismatches"] + r["vocab_mismatches"] for r in results)
    return 1 if failed else 0


def _write_json(path: str, obj) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(obj, indent=1, default=str))


def _write_csv(path: str, rows: list[dict], fields: list[str] | None = None) -> None:
    import csv

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = fields or list(dict.fromkeys(k for r in rows for k in r))
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _cmd_certify_engine(args) -> int:
    from .bench.machine import machine_facts
    from .campaigns import engine_campaign
    from .families import ENGINE_FAMILIES
    from .registry import known, load

    names = args.names or [n for n in known() if load(n).family in ENGINE_FAMILIES]
    gpu_options = {}
    device_facts = None
    if args.device == "gpu":
        from .engine.gpu import GpuEngine, tune_simulator

        if not GpuEngine.available():
            raise ToktierError(
                "--device gpu: no usable CUDA GPU with CuPy (pip install 'toktier[gpu]'); "
                "set NUMBA_ENABLE_CUDASIM=1 for a small simulator run"
            )
        tune_simulator()
        gpu_options = {"batch": args.batch, "max_synthetic": args.max_synthetic,
                       "single_limit": args.single_limit, "cut_limit": args.cut_limit,
                       "batch_graphs": args.batch_graphs, "short_map": args.short_map,
                       "units": args.units}  # fmt: skip
    elif args.batch_graphs is not None or args.short_map is not None or args.units or any(
        v is not None for v in (args.max_synthetic, args.single_limit, args.cut_limit)
    ):
        raise ToktierError(
            "--max-synthetic/--single-limit/--cut-limit/--batch-graphs/--short-map/--units "
            "apply to --device gpu"
        )
    results = []
    for name in names:
        tok = load(name)
        r = engine_campaign.run_campaign(
            tok, args.chars, seed=args.seed, codepoint_stride=args.codepoint_stride,
            progress=not args.quiet, device=args.device, **gpu_options,
        )  # fmt: skip
        d = r.to_dict()
        results.append(d)
        device_facts = d.get("device_facts", device_facts)
        extra = ""
        if args.device == "gpu":
            extra = f"; single path {d['single_inputs']:,} texts / {d['single_chars']:,} chars"
        print(
            f"{name} [{args.device}]: split {d['split_inputs']:,} inputs / {d['split_chars']:,} chars / "
            f"{d['split_pieces']:,} pieces; ids {d['id_inputs']:,} inputs / {d['id_chars']:,} chars / "
            f"{d['id_tokens']:,} tokens; {d['cuts_checked']:,} cuts proven; "
            f"{d['codepoints_covered']:,} code points{extra} -> {d['divergences']} divergences "
            f"({d['seconds']} s)"
        )
    if args.out:
        record = {
            "machine": machine_facts(),
            "chars_requested": args.chars,
            "codepoint_stride": args.codepoint_stride,
            "results": results,
        }
        if args.device == "gpu":
            record |= {"device": "gpu", "gpu": device_facts, "gpu_options": gpu_options}
        _write_json(args.out, record)
    return 1 if sum(r["divergences"] for r in results) else 0


def _cmd_certify_repair(args) -> int:
    from .bench.machine import machine_facts
    from .campaigns import repair_campaign
    from .workload import archives

    archive = Path(args.archive) if args.archive else archives.find_archive("mini-swe-agent")
    result = repair_campaign.certify_repair(
        args.names or artifacts.registry_names(),
        oracle_trials=args.oracle_trials,
        adversarial_examples=args.adversarial_examples,
        replay_sessions=args.replay_sessions or None,
        archive=archive,
        seed=args.seed,
        progress=not args.quiet,
    )
    rows = repair_campaign.summary_rows(result)
    for r in rows:
        print(
            f"{r['tokenizer']}: oracle {r.get('oracle_trials', 0):,} trials / {r.get('oracle_failures', 0)} failures; "
            f"adversarial {r['adversarial_appends'] + r['adversarial_edits']:,} ops / {r['adversarial_mismatches']} mismatches; "
            f"replay {r.get('replay_calls', 0):,} calls / {r.get('replay_mismatches', 0)} mismatches"
        )
    if args.out:
        _write_json(
            args.out,
            {"machine": machine_facts(), "parameters": vars(args) | {"func": None}, **result},
        )
    if args.table:
        _write_csv(args.table, rows)
    bad = sum(
        r.get("oracle_failures", 0) + r["adversarial_mismatches"] + r.get("replay_mismatches", 0)
        for r in rows
    )
    return 1 if bad else 0


def _cmd_certify_user_files(args) -> int:
    import tempfile

    from .bench.machine import machine_facts
    from .campaigns import user_files

    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="toktier-user-files-") as tmp:
        workdir = Path(args.keep) if args.keep else Path(tmp)
        for base in args.names:
            r = user_files.run_campaign(base, args.files, workdir=workdir, seed=args.seed)
            rows.append(r.row())
            failures += r.failures
            print(
                f"{base}: {r.files} mutated files ({r.engine_kept} on the engine, "
                f"{sum(r.engine_refused.values())} refused → reference); {r.texts:,} texts, "
                f"{r.tier_requests:,} tier requests; {r.divergences} divergences"
            )
    for f in failures[:20]:
        print("  DIVERGENCE", f)
    if args.out:
        _write_json(args.out, {"machine": machine_facts(), "parameters": vars(args) | {"func": None},
                               "results": rows, "failures": failures})  # fmt: skip
    if args.table:
        _write_csv(args.table, [{k: v for k, v in r.items() if k not in ("kinds", "refusals")}
                                | {"refusals": json.dumps(r["refusals"])} for r in rows])  # fmt: skip
    return 1 if failures else 0


def _cmd_soak(args) -> int:
    from .bench import soak
    from .bench.machine import machine_facts
    from .bench.streams import load_trajectories
    from .workload import archives

    archive = Path(args.archive) if args.archive else archives.find_archive("mini-swe-agent")
    if archive is None:
        raise SystemExit("no trajectory archive: run `toktier fetch-data mini-swe-agent` first")
    trajs = load_trajectories(archive, limit=args.trajectories or None)
    run = soak.soak(
        trajs, args.tokenizer, duration_s=args.minutes * 60, rate=args.rate,
        workers=args.workers, live=args.live, ttl_s=args.ttl, max_bytes=args.budget_mb << 20,
        verify_rate=args.verify_rate, seed=args.seed,
    )  # fmt: skip
    run["machine"] = machine_facts()
    v = run["verdict"]
    print(
        f"soak: {run['requests']['done']:,} of {run['requests']['sent']:,} requests answered, "
        f"{run['requests']['errors']} errors; verifier {run['verifier']['checked']:,} checked, "
        f"{run['verifier']['mismatches']} mismatches; RSS max {v['rss_max_mb']:.0f} MiB, growth "
        f"over the last third {v['rss_growth_last_third']}; state under budget: "
        f"{v['state_under_budget']} -> {'PASS' if v['passed'] else 'FAIL'}"
    )
    if args.out:
        _write_json(args.out, run)
    if args.table:
        _write_csv(args.table, run["probes"])
    if args.figure:
        Path(args.figure).parent.mkdir(parents=True, exist_ok=True)
        soak.plot(run, args.figure)
    return 0 if v["passed"] else 1


def _cmd_profile_gpu(args) -> int:
    import socket

    from .bench import gpu_profile

    opts = {"corpus_chars": args.corpus_chars, "repeats": args.repeats}
    if args.smoke:  # a few tiny documents: proves the script runs (simulator CI), times nothing
        opts = {"corpus_chars": 400, "repeats": 1, "sources": ("stdlib",)}
    opts["short_map"] = args.short_map
    opts["units"] = args.units
    record = gpu_profile.run(args.tokenizers, allow_simulator=args.allow_simulator,
                             progress=not args.quiet, **opts)  # fmt: skip
    out = Path(args.out or f"results/runs/gpu-profile/profile-{socket.gethostname()}.json")
    _write_json(str(out), record)
    text = gpu_profile.report(record)
    out.with_suffix(".txt").write_text(text)
    print(text if not args.quiet else f"-> {out} and {out.with_suffix('.txt')}")
    return 0


def _cmd_bench_gpu(args) -> int:
    import socket

    from .bench import gpu_bench
    from .workload import archives

    archive = Path(args.archive) if args.archive else archives.find_archive("mini-swe-agent")
    if archive is None:
        raise ToktierError("no trajectory archive: pass --archive (see `toktier fetch-data`)")
    opts = {
        "sizes": args.sizes, "samples": args.samples, "tail_chars": args.tail_chars,
        "tail_samples": args.tail_samples, "corpus_chars": args.corpus_chars,
        "repeats": args.repeats, "cpu": not args.no_cpu, "contention_procs": args.contention_procs,
        "batch_graphs_ab": args.batch_graphs_ab, "short_map_ab": args.short_map_ab,
        "units_ab": args.units_ab,
    }  # fmt: skip
    if args.smoke:  # a few tiny texts: proves the script runs (simulator CI), times nothing
        opts |= {
            "sizes": [1500],
            "samples": 1,
            "tail_chars": 1000,
            "tail_samples": 1,
            "corpus_chars": 600,
            "repeats": 1,
            "cpu": not args.no_cpu,  # the host's rows too: the smoke run proves they run
            "contention_procs": 1,
            "trajectories": 40,
            "corpus_sources": ("stdlib",),
        }
    record = gpu_bench.run(
        args.tokenizers, archive, allow_simulator=args.allow_simulator, progress=not args.quiet,
        **opts,
    )  # fmt: skip
    out = args.out or f"results/runs/gpu-{socket.gethostname()}.json"
    _write_json(out, record)
    for r in record["latency_summary"]:
        print(f"{r['tokenizer']} {r['method']:26s} {r['chars']:>9,} chars: "
              f"P50 {r['p50']:9.2f} ms  P90 {r['p90']:9.2f} ms (n={r['n']})")  # fmt: skip
    for r in record["throughput"]:
        print(f"{r['tokenizer']} {r['corpus']:12s} {r['mode']:11s} {r['gb_per_s']:8.4f} GB/s")
    for r in record["tail_summary"]:
        print(f"{r['tokenizer']} {r['method']:26s} contention={r['contention']!s:5s} "
              f"P99 {r['p99']:8.2f} ms")  # fmt: skip
    print(f"host syncs per request: {record['host_syncs']}; exact: {record['all_exact']}; -> {out}")
    return 0 if record["all_exact"] else 1


def _cmd_audit(args) -> int:
    from .audit import PUBLISHED, ladder, method_names
    from .bench.machine import machine_facts
    from .bench.streams import load_trajectories
    from .registry import known
    from .workload import archives

    toks = args.names or known()
    if args.methods == "all":
        meths = method_names(sweep=True)
    elif args.methods == "published":
        meths = list(PUBLISHED)
    else:
        meths = [m.strip() for m in args.methods.split(",") if m.strip()]
    trajs = []
    if args.sessions:
        archive = Path(args.archive) if args.archive else archives.find_archive("mini-swe-agent")
        if archive is None:
            raise ToktierError("no trajectory archive: pass --archive or --sessions 0 "
                               "(see `toktier fetch-data`)")  # fmt: skip
        trajs = load_trajectories(archive, limit=args.sessions)
    try:
        result = ladder(toks, meths, seams=args.seams, trajectories=trajs, seed=args.seed,
                        progress=not args.quiet, workers=args.workers)  # fmt: skip
    except ValueError as e:
        raise ToktierError(str(e)) from None
    if args.out:
        _write_json(args.out, {"machine": machine_facts(),
                               "parameters": vars(args) | {"func": None}, **result})  # fmt: skip
    print(f"{'tokenizer':13s} {'method':28s} {'workload':8s} {'cases':>6s} {'reused':>7s} "
          f"{'kept IDs':>8s} {'wrong':>6s}")  # fmt: skip
    for r in result["rows"]:
        print(f"{r['tokenizer']:13s} {r['method']:28s} {r['workload']:8s} {r['cases']:6d} "
              f"{r['reuse_rate']:7.1%} {r['kept_id_share']:8.1%} {r['wrong']:6d}")  # fmt: skip
    tier_wrong = sum(r["wrong"] for r in result["rows"] if r["method"] == "toktier")
    if tier_wrong:
        print(f"toktier served {tier_wrong} wrong answers: a bug", file=sys.stderr)
    return 1 if tier_wrong else 0


def _cmd_claims(args) -> int:
    from .bench.claims import write_claims

    tree = Path(args.results)
    if not (tree / "tables").is_dir():
        raise ToktierError(f"{tree}/tables: no results tree there (run the workflow first)")
    out = Path(args.out) if args.out else tree / "CLAIMS.md"
    rows = write_claims(tree, out, label=args.results)
    met = sum(r["ok"] is True for r in rows)
    missed = sum(r["ok"] is False for r in rows)
    print(f"{len(rows)} claims: {met} reproduced or met, {missed} missed, "
          f"{len(rows) - met - missed} partial or pending -> {out}")  # fmt: skip
    return 0


def _cmd_gpu_report(args) -> int:
    import seaborn as sns

    from .bench.gpu_report import write_gpu_report

    sns.set_theme(style="whitegrid")  # as notebook 06 draws the same figure
    tree, evidence = Path(args.results), Path(args.evidence or args.results)
    if not (evidence / "runs").is_dir():
        raise ToktierError(f"{evidence}/runs: no results tree there")
    out = write_gpu_report(tree, evidence)
    if out is None:
        print(f"no real-GPU bench records in {evidence}/runs (gpu-*.json); nothing drawn")
        return 1
    cert = out["certification"]
    bad = int(cert.divergences.sum()) if len(cert) else 0
    print(f"{len(set(out['latency'].file))} GPU bench runs, {len(cert)} GPU certifications "
          f"({bad} divergences), exact: {out['all_exact']} -> {tree}/tables/*gpu*.csv, "
          f"{tree}/figures/full-tokenization-gpu.png")  # fmt: skip
    return 0 if out["all_exact"] and not bad else 1


def _cmd_compare_runs(args) -> int:
    from .bench.compare import write_comparison

    run, evidence = Path(args.tree), Path(args.evidence)
    if not (run / "tables").is_dir():
        raise ToktierError(f"{run}/tables: no results tree there (run the workflow first)")
    if not (evidence / "tables").is_dir():
        raise ToktierError(f"{evidence}/tables: no committed evidence there")
    df = write_comparison(run, evidence)
    judged = df[df.agree.notna()]
    print(f"{int(judged.agree.sum())} of {len(judged)} comparable checks agree "
          f"({len(df) - len(judged)} not comparable) -> {run / 'comparison.md'}")  # fmt: skip
    return 0 if bool(judged.agree.all()) else 1


def _cmd_profile_engine(args) -> int:
    from . import load
    from .bench import engine_profile, machine

    texts = engine_profile.profile_texts(args.chars)
    rows = []
    for name in args.tokenizers.split(","):
        for r in engine_profile.stage_profile(load(name), texts, repeats=args.repeats):
            rows.append(r)
            print(f"{r['tokenizer']:8s} {r['text']:20s} decode {r['decode_ms']:6.2f}  literals "
                  f"{r['literals_ms']:6.2f}  pretokenize {r['pretokenize_ms']:6.2f}  pieces "
                  f"{r['pieces_ms']:7.2f}  total {r['total_ms']:7.2f} ms  "
                  f"({r['mb_per_s']:.0f} MB/s; empty caches {r['total_empty_cache_ms']:.2f} ms)")  # fmt: skip
    facts = machine.machine_facts()
    for r in rows:
        r["cpu"], r["commit"] = facts["cpu"], facts["commit"]
    _write_csv(args.out, rows)
    print(f"-> {args.out}")
    if args.figure:
        import csv

        before = None
        if args.before:
            with open(args.before, newline="") as f:
                before = list(csv.DictReader(f))
        Path(args.figure).parent.mkdir(parents=True, exist_ok=True)
        engine_profile.plot_stages(rows, args.figure, before)
        print(f"-> {args.figure}")
    return 0


def _targets_title(m: dict, others: tuple[tuple[dict, str], ...] = ()) -> str:
    """The engine-targets figure's title, naming the run's machine and commit (and, for rows
    a later run added to the table, ``others``: (machine, the tokenizers it ran))."""
    def where(m: dict) -> str:
        return f"{m.get('cpu', '?')} x {m.get('cores', '?')} @ {str(m.get('commit', '?'))[:7]}"

    runs = "one run" if not others else "runs"
    at = "; ".join([where(m)] + [f"{toks} @ {str(o.get('commit', '?'))[:7]}" for o, toks in others])
    return (f"Issue #12's engine targets, {runs} ({at}): ratio per cell (bold: met; blue above the "
            "goal, red below; grey: not judged)")  # fmt: skip


def _cmd_bench_engine_targets(args) -> int:
    from . import load
    from .bench import engine_targets, machine

    if args.from_table:
        if not args.figure:
            raise ToktierError("--from-table draws a figure: pass --figure PATH")
        import pandas as pd

        title = ""
        if Path(args.run).exists():  # the run behind the table: say where it ran
            others = []
            for path in args.also_run or []:  # runs whose rows were added to the table
                rec = json.loads(Path(path).read_text())
                toks = ", ".join(dict.fromkeys(r["tokenizer"] for r in rec["summary"]))
                others.append((rec.get("machine", {}), toks))
            title = _targets_title(json.loads(Path(args.run).read_text()).get("machine", {}),
                                   tuple(others))  # fmt: skip
        counts = engine_targets.plot_targets(pd.read_csv(args.from_table), args.figure, title)
        print(", ".join(f"{k} {m} of {n}" for k, (m, n) in counts.items()), f"-> {args.figure}")
        return 0
    rows = []
    for name in args.tokenizers.split(","):
        rows += engine_targets.run(load(name), args.sizes, args.samples, progress=not args.quiet)
    table = engine_targets.summary(rows)
    _write_csv(args.out, table)
    # the timing protocol (``timing.time_method``): records without it charged a timed call
    # for what the call before it had freed (Gigatoken's empty-cache cells 3-13x at 48K)
    protocol = {"fresh_str": True, "settled_allocator": True}
    _write_json(args.run, {"machine": machine.machine_facts(), "protocol": protocol,
                           "samples": rows, "summary": table})  # fmt: skip
    for r in table:
        print(f"{r['tokenizer']:8s} {r['text']:20s} {r['chars']:>9,}: 1 thread {r['toktier_1t_ms']:8.2f}"
              f" ms (Gigatoken/1t {r['1t_vs_gigatoken'] or float('nan'):5.2f}, HF/1t "
              f"{r['1t_vs_hf']:5.1f}), all cores {r['toktier_all_ms']:8.2f} ms (fastokens/all "
              f"{r['all_vs_fastokens'] or float('nan'):5.2f})")  # fmt: skip
    if args.figure:
        engine_targets.plot_targets(table, args.figure, _targets_title(machine.machine_facts()))
    inexact = sum(1 for r in rows if r.get("exact") is False)
    print(f"toktier samples not equal to the reference: {inexact}; -> {args.out}, {args.run}")
    return 0 if inexact == 0 else 1


def _cmd_bench_continuation(args) -> int:
    from . import load
    from .bench import continuation, machine
    from .workload import archives

    archive = Path(args.archive) if args.archive else archives.find_archive("mini-swe-agent")
    if archive is None:
        raise ToktierError("no trajectory archive: pass --archive (see `toktier fetch-data`)")
    from .bench.streams import load_trajectories
    from .campaigns import corpus

    methods = tuple(m.strip() for m in args.methods.split(","))
    trajs = load_trajectories(archive)  # once for every tokenizer
    multilingual = "".join(corpus.pycountry_documents())
    need = max(args.contexts) + len(args.contexts) * args.delta * (args.samples + 2) * 2
    tagger = None
    if args.by_contention:
        from .bench.contention import ContentionTagger

        tagger = ContentionTagger()
        floor = tagger.calibrate()
        print(f"contention probe floor {floor:.1f} us (a call is tagged contended when its probe "
              f"reads over {tagger.ratio}x that)")  # fmt: skip
    rows = []
    for name in args.tokenizers.split(","):
        streams = continuation.standard_streams(trajs, name, need, multilingual)
        rows += continuation.continuation_latency(
            load(name), streams, args.contexts, delta=args.delta, samples=args.samples,
            slow_samples=args.samples, methods=methods, progress=not args.quiet, tagger=tagger,
        )  # fmt: skip
    if tagger is not None:
        tagger.retag(rows)  # against the run's fastest probe
    table = continuation.summarize(rows)
    _write_csv(args.out, table)
    run = {"machine": machine.machine_facts(), "delta": args.delta, "rows": rows}
    if tagger is not None:
        run["contention"] = {"floor_us": tagger.floor, "ratio": tagger.ratio}
    _write_json(args.run, run)
    for r in table:
        print(f"{r['tokenizer']:14s} {r['corpus']:13s} {r['context']:>9,} {r['method']:28s} "
              f"P50 {r['p50_us']:10,.0f} us  exact: {r['exact']}")  # fmt: skip
    if tagger is not None:
        from .bench.contention import summarize_by_state

        by_state = summarize_by_state(rows, ("tokenizer", "corpus", "context", "method"))
        state_out = Path(args.out).with_name(Path(args.out).stem + "-by-state.csv")
        _write_csv(state_out, by_state)
        for r in by_state:
            if r["state"] != "all":
                print(f"{r['tokenizer']:14s} {r['corpus']:13s} {r['context']:>9,} "
                      f"{r['method']:28s} {r['state']:14s} n={r['n']:4d} P50 "
                      f"{r['p50_us']:10,.0f} us")  # fmt: skip
        print(f"per state -> {state_out}")
    inexact = sum(1 for r in table if r["exact"] is False)
    print(f"tier cells not equal to the reference: {inexact}; -> {args.out}, {args.run}")
    return 0 if inexact == 0 else 1


def _cmd_fetch_data(args) -> int:
    from .workload import archives

    path = archives.obtain(
        args.key,
        dest=Path(args.dest) if args.dest else None,
        mirror=Path(args.mirror) if args.mirror else None,
        url=args.url or None,
        network=not args.no_download,
    )
    print(f"{args.key}: {path} (verified: archive sha256, or file contents for a source rebuild)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="toktier", description="Exact, stateful tokenization for agentic LLM serving."
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("tokenizers", help="table of registered tokenizers")
    s.add_argument(
        "names", nargs="*", help="registry names or tokenizer.json paths (default: all registered)"
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_tokenizers)

    s = sub.add_parser("encode", help="print the token IDs of a file or stdin")
    s.add_argument(
        "--tokenizer", "-t", required=True, help="registry name or path to a tokenizer.json"
    )
    s.add_argument("file", nargs="?", help="input file, or - for stdin (default)")
    s.add_argument("--json", action="store_true", help="print a JSON list")
    s.set_defaults(func=_cmd_encode)

    s = sub.add_parser("build", help="fetch, convert and verify pinned tokenizer artifacts")
    s.add_argument("names", nargs="*")
    s.add_argument("--force", action="store_true", help="rebuild even if present")
    s.add_argument(
        "--record-pins",
        action="store_true",
        help="maintainers: write produced sha256 into the manifest",
    )
    s.set_defaults(func=_cmd_build)

    s = sub.add_parser(
        "certify-conversion", help="differential campaign: converted tokenizers vs tiktoken"
    )
    s.add_argument("names", nargs="*")
    s.add_argument("--chars", type=int, default=1_000_000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", help="write the JSON record here")
    s.add_argument("--table", help="write a CSV summary here")
    s.set_defaults(func=_cmd_certify_conversion)

    s = sub.add_parser(
        "certify-engine",
        help="engine campaign: split level and ID level (with spans) vs the reference",
    )
    s.add_argument("names", nargs="*", help="default: every tokenizer with a compiled engine")
    s.add_argument("--chars", type=int, default=1_000_000, help="real-text characters")
    s.add_argument(
        "--codepoint-stride", type=int, default=1, help="test every Nth code point (1: all)"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quiet", action="store_true", help="no progress bars")
    s.add_argument("--out", help="write the JSON record here")
    s.add_argument(
        "--device", choices=["cpu", "gpu"], default="cpu",
        help="engine to certify: the numba CPU engine or the GPU engine (a CUDA GPU, or the "
        "CUDA simulator with NUMBA_ENABLE_CUDASIM=1)",
    )  # fmt: skip
    s.add_argument("--batch", type=int, default=4096, help="gpu: documents per pipeline run")
    s.add_argument("--max-synthetic", type=int, help="gpu: sample this many synthetic inputs")
    s.add_argument("--single-limit", type=int, help="gpu: real documents on the single path")
    s.add_argument("--cut-limit", type=int, help="gpu: texts whose cuts are proven")
    s.add_argument("--batch-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="gpu: batches replay CUDA graphs (default: on; --no-batch-graphs for eager "
                   "batches)")  # fmt: skip
    s.add_argument("--short-map", action=argparse.BooleanOptionalAction, default=None,
                   help="gpu: the short-piece map on the device (default: on for byte-level BPE; "
                   "--no-short-map merges every piece)")  # fmt: skip
    s.add_argument("--units", action="store_true",
                   help="gpu: non-ASCII requests uploaded as 16-bit characters, their UTF-8 "
                   "written on the device (not yet the default)")  # fmt: skip
    s.set_defaults(func=_cmd_certify_engine)

    s = sub.add_parser(
        "certify-repair",
        help="repair campaigns: certificate oracle, adversarial, real-session replay",
    )
    s.add_argument("names", nargs="*")
    s.add_argument("--oracle-trials", type=int, default=200, help="random contexts per class pair")
    s.add_argument(
        "--adversarial-examples", type=int, default=500, help="hypothesis scenarios per tokenizer"
    )
    s.add_argument(
        "--replay-sessions", type=int, default=10, help="trajectories to replay (0: all)"
    )
    s.add_argument("--archive", help="trajectory archive (default: the verified mirror copy)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quiet", action="store_true", help="no stage lines or progress bars")
    s.add_argument("--out")
    s.add_argument("--table")
    s.set_defaults(func=_cmd_certify_repair)

    s = sub.add_parser(
        "certify-user-files",
        help="mutated user tokenizer files (added tokens): engine or reference, never wrong IDs",
    )
    s.add_argument("names", nargs="*", default=["llama3", "qwen3"])
    s.add_argument("--files", type=int, default=20, help="mutated files per base tokenizer")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--keep", help="folder for the mutated files (reproducers are kept there)")
    s.add_argument("--out")
    s.add_argument("--table")
    s.set_defaults(func=_cmd_certify_user_files)

    s = sub.add_parser(
        "soak",
        help="sessions churning through tier workers for minutes: RSS, budget, TTL, kill, verifier",
    )
    s.add_argument("--tokenizer", default="llama3")
    s.add_argument("--minutes", type=float, default=10.0)
    s.add_argument("--rate", type=float, default=100.0, help="requests per second (Poisson)")
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--live", type=int, default=256, help="concurrent sessions")
    s.add_argument("--ttl", type=float, default=30.0, help="session TTL, seconds")
    s.add_argument("--budget-mb", type=int, default=128, help="session-state budget per worker")
    s.add_argument("--verify-rate", type=float, default=0.05)
    s.add_argument("--trajectories", type=int, default=0, help="0: all 500")
    s.add_argument("--archive", help="trajectory archive (default: the verified mirror copy)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out")
    s.add_argument("--table")
    s.add_argument("--figure")
    s.set_defaults(func=_cmd_soak)

    s = sub.add_parser(
        "bench-gpu",
        help="GPU full tokenization: latency, GB/s, host syncs, P99 (needs a CUDA GPU)",
    )
    s.add_argument("--tokenizers", nargs="+", default=["qwen3"])
    s.add_argument("--archive", help="trajectory archive (default: the verified mirror copy)")
    s.add_argument("--out", help="JSON record (default: results/runs/gpu-<host>.json)")
    s.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 2_000_000,
                                                             4_400_000])  # fmt: skip
    s.add_argument("--samples", type=int, default=5, help="fresh texts per size")
    s.add_argument("--tail-chars", type=int, default=50_000)
    s.add_argument("--tail-samples", type=int, default=200, help="texts for the P99 rows")
    s.add_argument("--corpus-chars", type=int, default=1_000_000, help="per corpus")
    s.add_argument("--repeats", type=int, default=2, help="throughput: best of")
    s.add_argument("--no-cpu", action="store_true", help="skip the CPU engine rows")
    s.add_argument("--contention-procs", type=int, help="busy processes (default: all cores)")
    s.add_argument(
        "--allow-simulator", action="store_true",
        help="permit a run under NUMBA_ENABLE_CUDASIM=1 (smoke only: timings are meaningless)",
    )  # fmt: skip
    s.add_argument("--batch-graphs-ab", action="store_true",
                   help="throughput rows again with the other batch-graph setting (A/B)")  # fmt: skip
    s.add_argument("--short-map-ab", action="store_true",
                   help="single requests (arrays) and throughput again with the other "
                   "short-map setting of the GPU engine (A/B on the same texts)")  # fmt: skip
    s.add_argument("--units-ab", action="store_true",
                   help="single requests (arrays) again with the other upload (16-bit "
                   "characters, UTF-8 written on the device), on the same texts")  # fmt: skip
    s.add_argument("--smoke", action="store_true", help="tiny sizes (with --allow-simulator)")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_bench_gpu)

    s = sub.add_parser(
        "profile-gpu",
        help="where a GPU request's time goes: per-kernel device time, host share (needs a GPU)",
    )
    s.add_argument("--tokenizers", nargs="+", default=["qwen3"])
    s.add_argument("--corpus-chars", type=int, default=1_000_000, help="per corpus")
    s.add_argument("--repeats", type=int, default=3, help="wall time: best of")
    s.add_argument("--out", help="JSON record (default: results/runs/gpu-profile/"
                   "profile-<host>.json; the text report beside it, .txt)")  # fmt: skip
    s.add_argument("--allow-simulator", action="store_true",
                   help="permit a run under NUMBA_ENABLE_CUDASIM=1 (smoke only)")  # fmt: skip
    s.add_argument("--smoke", action="store_true", help="tiny corpora (with --allow-simulator)")
    s.add_argument("--short-map", action=argparse.BooleanOptionalAction, default=None,
                   help="the short-piece map on the device (default: on for byte-level BPE)")  # fmt: skip
    s.add_argument("--units", action="store_true",
                   help="non-ASCII requests uploaded as 16-bit characters (UTF-8 written on "
                   "the device)")  # fmt: skip
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_profile_gpu)

    s = sub.add_parser(
        "audit",
        help="audit incremental tokenizers (serving stacks' heuristics, yours, the tier): "
        "wrong answers with shrunk reproducers, reuse, latency",
    )
    s.add_argument("names", nargs="*", help="tokenizers (default: all registered)")
    s.add_argument("--methods", default="published",
                   help="published | all (with parameter sweeps) | comma list of names, "
                   "name@value, or module:factory (your own: factory(tok) -> method)")  # fmt: skip
    s.add_argument("--seams", type=int, default=200, help="adversarial append cases per method")
    s.add_argument("--sessions", type=int, default=5,
                   help="trajectories replayed as is and with a rewritten history (0: none)")  # fmt: skip
    s.add_argument("--archive", help="trajectory archive (default: the verified mirror copy)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--workers", type=int, default=1,
                   help="processes running the (tokenizer, method) jobs (same answers for any)")
    s.add_argument("--out", help="JSON record (rows, per-pitfall counts, reproducers)")
    s.set_defaults(func=_cmd_audit)

    s = sub.add_parser(
        "claims",
        help="CLAIMS.md computed from a results tree: paper value, ours, verdict by a stated rule",
    )
    s.add_argument("results", nargs="?", default="results", help="a results tree")
    s.add_argument("--out", help="output markdown (default: RESULTS/CLAIMS.md)")
    s.set_defaults(func=_cmd_claims)

    s = sub.add_parser(
        "gpu-report",
        help="redraw the GPU tables and figure from committed records (no GPU needed)",
    )
    s.add_argument("results", nargs="?", default="results", help="the tree to write into")
    s.add_argument("--evidence", help="the tree holding runs/gpu-*.json (default: RESULTS)")
    s.set_defaults(func=_cmd_gpu_report)

    s = sub.add_parser(
        "compare-runs",
        help="your run vs ours: exactness verdicts and method orderings against the evidence",
    )
    # an input folder: not named ``run``, the output-path check's name for a record file
    s.add_argument("tree", metavar="run", help="a results tree, e.g. results/kick-the-tires")
    s.add_argument("--evidence", default="results", help="the committed results tree")
    s.set_defaults(func=_cmd_compare_runs)

    s = sub.add_parser(
        "profile-engine", help="where a single-thread CPU engine encode spends its time, by stage"
    )
    s.add_argument("--tokenizers", default="llama3,qwen3,gpt-oss")
    s.add_argument("--chars", type=int, default=1_000_000, help="characters per text")
    s.add_argument("--repeats", type=int, default=5, help="best of this many runs per stage")
    s.add_argument("--out", default="results/tables/engine-stages.csv")
    s.add_argument("--figure", help="stacked-bar PNG of the stages (e.g. results/figures/engine-stages.png)")
    s.add_argument("--before", help="an earlier engine-stages CSV to draw beside (hatched)")
    s.set_defaults(func=_cmd_profile_engine)

    s = sub.add_parser(
        "bench-engine-targets",
        help="issue #12's targets: code / multilingual / mixed at 48K, 1M, 4.4M vs Gigatoken, "
        "fastokens, HF",
    )
    s.add_argument("--tokenizers", default="llama3,qwen3,gpt-oss")
    s.add_argument("--sizes", type=int, nargs="+", default=[48_000, 1_000_000, 4_400_000])
    s.add_argument("--samples", type=int, default=5,
                   help="different texts per cell (P50); cells below 100K characters take 3x")
    s.add_argument("--out", default="results/tables/engine-targets.csv")
    s.add_argument("--run", default="results/runs/engine-targets.json")
    s.add_argument("--figure", help="heat maps of the four targets (e.g. "
                   "results/figures/engine-targets.png)")  # fmt: skip
    s.add_argument("--from-table", help="draw --figure from this earlier table; run nothing")
    s.add_argument("--also-run", action="append", metavar="RUN",
                   help="with --from-table: a later run whose rows the table also holds (its "
                   "commit and tokenizers go into the title); repeatable")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_bench_engine_targets)

    s = sub.add_parser(
        "bench-continuation",
        help="one continuation vs context size (experiment 10's protocol) for any tokenizer",
    )
    s.add_argument("--tokenizers", default="mistral-sp-v3")
    s.add_argument("--contexts", type=int, nargs="+", default=[12_000, 48_000, 200_000])
    s.add_argument("--delta", type=int, default=1100)
    s.add_argument("--samples", type=int, default=40, help="continuations per cell (5 a session)")
    s.add_argument(
        "--methods",
        default="tier append,tier full text,reference full re-encode",
        help="comma-separated, from bench.continuation.METHODS and OPTIONAL",
    )
    s.add_argument("--archive")
    s.add_argument("--out", default="results/tables/continuation-extra.csv")
    s.add_argument("--run", default="results/runs/continuation-extra.json")
    s.add_argument(
        "--by-contention",
        action="store_true",
        help="probe the core before each timed call (bench.contention) and also report P50 "
        "per state (contended / not) in OUT's -by-state.csv",
    )
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_cmd_bench_continuation)

    s = sub.add_parser(
        "fetch-data",
        help="obtain a third-party archive: mirror, URL, else its GitHub source (always verified)",
    )
    s.add_argument("key", choices=["mini-swe-agent", "tracelab"])
    s.add_argument("--dest", help="where to put it (default: the data home)")
    s.add_argument(
        "--mirror",
        help="folder holding the archive (default: TOKTIER_DATA_MIRROR or ../shared/data)",
    )
    s.add_argument("--url", help="download address, used when no mirror holds the file")
    s.add_argument(
        "--no-download",
        action="store_true",
        help="never fetch the files from their GitHub source (pinned commit, checked by content)",
    )
    s.set_defaults(func=_cmd_fetch_data)
    return p


_FILE_OUTPUTS = ("out", "run", "table")  # every command's record, table or report path


def _check_outputs(args) -> None:
    """Refuse, before any work, an output path that cannot be a file (a folder, or a file
    where its folder should be): a benchmark or campaign of many minutes otherwise failed
    only when it came to write its answer."""
    for name in _FILE_OUTPUTS:
        path = getattr(args, name, None)
        if not path:
            continue
        out = Path(path)
        if out.is_dir():
            raise ToktierError(f"--{name} {path} is a folder: give a file path")
        for parent in out.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ToktierError(f"--{name} {path}: {parent} is a file, not a folder")
                break


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_outputs(args)
        return args.func(args)
    except (ToktierError, TypeError, ValueError) as exc:
        print(f"toktier: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
