rule notebook_lopt_counterexample:
    """Claim L1: LoPT's length threshold accepts inexact seams; toktier's certificate refuses them."""
    input:
        notebook="build/notebooks/07-lopt-counterexample.ipynb",
        tokenizers=[tokenizer_json(n) for n in config["lopt"]["tokenizers"]],
    output:
        notebook="results/notebooks/07-lopt-counterexample.ipynb",
        table="results/tables/lopt-counterexamples.csv",
        run="results/runs/lopt-counterexamples.json",
        figure=report(
            "results/figures/lopt-counterexamples.png",
            caption="../report/lopt-counterexample.rst",
            category="Baselines",
        ),
    params:
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["lopt"]["tokenizers"]),
        trials=config["lopt"]["trials"],
        seed=config["certification"]["seed"],
    log:
        "results/logs/notebooks/07-lopt-counterexample.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m papermill {input.notebook:q} {output.notebook:q} "
        "--cwd {params.root:q} -k python3 -y 'tokenizers: {params.tokenizers}' "
        "-p trials {params.trials} -p seed {params.seed} -p results_dir results > {log:q} 2>&1"
