rule notebook_continuation:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/10-continuation.ipynb",
        trajectories=TRAJECTORIES,
        tokenizers=[tokenizer_json(n) for n in config["continuation"]["tokenizers"]],
    output:
        notebook=f"{RESULTS}/notebooks/10-continuation.ipynb",
        table=f"{RESULTS}/tables/continuation-latency.csv",
        targets=f"{RESULTS}/tables/continuation-targets.csv",
        run=f"{RESULTS}/runs/continuation.json",
        figure=report(
            f"{RESULTS}/figures/continuation-latency.png",
            caption="../report/continuation-latency.rst",
            category="Repair",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["continuation"]["tokenizers"]),
        contexts=json.dumps(config["continuation"]["contexts"]),
        delta=config["continuation"]["delta"],
        samples=config["continuation"]["samples"],
        slow_samples=config["continuation"]["slow_samples"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/10-continuation.tsv"
    log:
        f"{RESULTS}/logs/notebooks/10-continuation.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-y 'tokenizers: {params.tokenizers}'",
            "-y 'contexts: {params.contexts}'",
            "-p delta {params.delta}",
            "-p samples {params.samples}",
            "-p slow_samples {params.slow_samples}",
        )


rule notebook_frontend_cost:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/11-frontend-cost.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["cost"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/11-frontend-cost.ipynb",
        table=f"{RESULTS}/tables/frontend-cost.csv",
        accounts=f"{RESULTS}/tables/served-scanned.csv",
        account_bins=f"{RESULTS}/tables/served-scanned-bins.csv",
        run=f"{RESULTS}/runs/frontend-cost.json",
        accounts_figure=report(
            f"{RESULTS}/figures/served-scanned.png",
            caption="../report/served-scanned.rst",
            category="Serving",
        ),
        figure=report(
            f"{RESULTS}/figures/frontend-cost.png",
            caption="../report/frontend-cost.rst",
            category="Serving",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["cost"]["tokenizer"],
        sessions=config["cost"]["sessions"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/11-frontend-cost.tsv"
    log:
        f"{RESULTS}/logs/notebooks/11-frontend-cost.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-p sessions {params.sessions}",
        )
