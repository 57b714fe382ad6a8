rule notebook_verifier_faults:
    """Claim S1: the shadow verifier catches every sampled injected fault, flags no clean request,
    and detects a faulty stream after a geometric number of requests."""
    input:
        notebook="build/notebooks/08-verifier-faults.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["verifier"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/08-verifier-faults.ipynb",
        table=f"{RESULTS}/tables/verifier-faults.csv",
        delay=f"{RESULTS}/tables/verifier-delay.csv",
        run=f"{RESULTS}/runs/verifier-faults.json",
        figure=report(
            f"{RESULTS}/figures/verifier-faults.png",
            caption="../report/verifier-faults.rst",
            category="Verification",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["verifier"]["tokenizer"],
        requests=config["verifier"]["requests"],
        fault_rate=config["verifier"]["fault_rate"],
        rates=json.dumps(config["verifier"]["rates"]),
        campaigns=config["verifier"]["campaigns"],
        max_context_chars=config["verifier"]["max_context_chars"],
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/08-verifier-faults.tsv"
    log:
        f"{RESULTS}/logs/notebooks/08-verifier-faults.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p tokenizer {params.tokenizer:q}",
            "-p archive {input.trajectories:q}",
            "-p requests {params.requests}",
            "-p fault_rate {params.fault_rate}",
            "-y 'rates: {params.rates}'",
            "-p campaigns {params.campaigns}",
            "-p max_context_chars {params.max_context_chars}",
            "-p seed {params.seed}",
        )


rule notebook_tail_capacity:
    """Claim T1: P99 sojourn vs offered load and burst tails, tier vs stateless front ends."""
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/09-tail-capacity.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["capacity"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/09-tail-capacity.ipynb",
        table=f"{RESULTS}/tables/tail-capacity.csv",
        bursts=f"{RESULTS}/tables/burst-tails.csv",
        run=f"{RESULTS}/runs/tail-capacity.json",
        figure=report(
            f"{RESULTS}/figures/tail-capacity.png",
            caption="../report/tail-capacity.rst",
            category="Service",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["capacity"]["tokenizer"],
        sessions=config["capacity"]["sessions"],
        duration=config["capacity"]["duration_s"],
        loads_stateless=json.dumps(config["capacity"]["loads_stateless"]),
        loads_tier=json.dumps(config["capacity"]["loads_tier"]),
        workers=json.dumps(config["capacity"]["workers"]),
        scenarios=config["capacity"]["burst_scenarios"],
        bursts=" ".join(
            f"-p {k} {config['capacity'][k]}"
            for k in ("burst_sessions", "burst_calls", "burst_window_s", "burst_compression",
                      "max_context_chars", "overhead_sessions", "overhead_appends",
                      "overhead_context", "verify_rate", "verify_cpu_share")
        ),
        objectives=json.dumps(config["capacity"]["objectives_ms"]),
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/09-tail-capacity.tsv"
    log:
        f"{RESULTS}/logs/notebooks/09-tail-capacity.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p tokenizer {params.tokenizer:q}",
            "-p archive {input.trajectories:q}",
            "-p sessions {params.sessions}",
            "-p duration_s {params.duration}",
            "-y 'loads_stateless: {params.loads_stateless}'",
            "-y 'loads_tier: {params.loads_tier}'",
            "-y 'workers: {params.workers}'",
            "-p burst_scenarios {params.scenarios}",
            "{params.bursts}",
            "-y 'objectives_ms: {params.objectives}'",
            "-p seed {params.seed}",
        )
