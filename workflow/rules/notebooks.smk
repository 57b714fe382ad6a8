rule render_notebook:
    """jupytext percent script -> .ipynb (the .py file is the source of truth)."""
    input:
        "notebooks/{nb}.py",
    output:
        "build/notebooks/{nb}.ipynb",
    params:
        py=PY,
        home=DATA_HOME,
    log:
        f"{RESULTS}/logs/notebooks/render-{{nb}}.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m jupytext --to ipynb --output {output:q} {input:q} > {log:q} 2>&1"


rule notebook_tokenizers:
    input:
        notebook="build/notebooks/01-tokenizers.ipynb",
        tokenizers=[tokenizer_json(n) for n in TOKENIZERS],
        certification=f"{RESULTS}/runs/conversion-certification.json",
    output:
        notebook=f"{RESULTS}/notebooks/01-tokenizers.ipynb",
        table=f"{RESULTS}/tables/tokenizers.csv",
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        names=",".join(TOKENIZERS),
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/01-tokenizers.tsv"
    log:
        f"{RESULTS}/logs/notebooks/01-tokenizers.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p names {params.names:q}",
        )


rule notebook_workload:
    input:
        notebook="build/notebooks/02-workload.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["workload"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/02-workload.ipynb",
        table=f"{RESULTS}/tables/workload.csv",
        summary=f"{RESULTS}/tables/workload-summary.csv",
        figure=report(
            f"{RESULTS}/figures/workload-anatomy.png",
            caption="../report/workload-anatomy.rst",
            category="Workload",
        ),
        joint=report(
            f"{RESULTS}/figures/workload-joint.png",
            caption="../report/workload-joint.rst",
            category="Workload",
        ),
        run=f"{RESULTS}/runs/workload.json",
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["workload"]["tokenizer"],
        max_sessions=config["workload"]["max_sessions"] or 0,
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/02-workload.tsv"
    log:
        f"{RESULTS}/logs/notebooks/02-workload.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-p max_sessions {params.max_sessions}",
        )
