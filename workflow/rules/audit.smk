rule notebook_audit:
    """Issue #15, claim A1: serving stacks' incremental tokenizers audited against the reference."""
    threads: workflow.cores  # the ladder's jobs run in one process per thread
    input:
        notebook="build/notebooks/12-audit.ipynb",
        tokenizers=[tokenizer_json(n) for n in config["audit"]["tokenizers"]],
        trajectories=TRAJECTORIES,
    output:
        notebook=f"{RESULTS}/notebooks/12-audit.ipynb",
        table=f"{RESULTS}/tables/audit-ladder.csv",
        divergences=f"{RESULTS}/tables/audit-divergences.csv",
        run=f"{RESULTS}/runs/audit.json",
        figure=report(
            f"{RESULTS}/figures/audit-ladder.png",
            caption="../report/audit-ladder.rst",
            category="Baselines",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["audit"]["tokenizers"]),
        seams=config["audit"]["seams"],
        sessions=config["audit"]["sessions"],
        sweep=config["audit"]["sweep"],
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/12-audit.tsv"
    log:
        f"{RESULTS}/logs/notebooks/12-audit.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-y 'tokenizers: {params.tokenizers}'",
            "-p seams {params.seams}",
            "-p sessions {params.sessions}",
            "-p sweep {params.sweep}",
            "-p seed {params.seed}",
            "-p workers {threads}",
            "-p archive {input.trajectories:q}",
        )
