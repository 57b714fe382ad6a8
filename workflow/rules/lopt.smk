rule notebook_lopt_counterexample:
    """Claim L1: LoPT's length threshold accepts inexact seams; toktier's certificate refuses them."""
    input:
        notebook="build/notebooks/07-lopt-counterexample.ipynb",
        tokenizers=[tokenizer_json(n) for n in config["lopt"]["tokenizers"]],
    output:
        notebook=f"{RESULTS}/notebooks/07-lopt-counterexample.ipynb",
        table=f"{RESULTS}/tables/lopt-counterexamples.csv",
        run=f"{RESULTS}/runs/lopt-counterexamples.json",
        figure=report(
            f"{RESULTS}/figures/lopt-counterexamples.png",
            caption="../report/lopt-counterexample.rst",
            category="Baselines",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["lopt"]["tokenizers"]),
        trials=config["lopt"]["trials"],
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/07-lopt-counterexample.tsv"
    log:
        f"{RESULTS}/logs/notebooks/07-lopt-counterexample.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-y 'tokenizers: {params.tokenizers}'",
            "-p trials {params.trials}",
            "-p seed {params.seed}",
        )
