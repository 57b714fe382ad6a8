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
        "results/logs/notebooks/render-{nb}.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m jupytext --to ipynb --output {output:q} {input:q} > {log:q} 2>&1"


rule notebook_tokenizers:
    input:
        notebook="build/notebooks/01-tokenizers.ipynb",
        tokenizers=[tokenizer_json(n) for n in TOKENIZERS],
        certification="results/runs/conversion-certification.json",
    output:
        notebook="results/notebooks/01-tokenizers.ipynb",
        table="results/tables/tokenizers.csv",
    params:
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        names=",".join(TOKENIZERS),
    log:
        "results/logs/notebooks/01-tokenizers.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m papermill {input.notebook:q} {output.notebook:q} --cwd {params.root:q} -k python3 "
        "-p names {params.names:q} -p results_dir results > {log:q} 2>&1"


rule notebook_workload:
    input:
        notebook="build/notebooks/02-workload.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["workload"]["tokenizer"]),
    output:
        notebook="results/notebooks/02-workload.ipynb",
        table="results/tables/workload.csv",
        summary="results/tables/workload-summary.csv",
        figure=report(
            "results/figures/workload-anatomy.png",
            caption="../report/workload-anatomy.rst",
            category="Workload",
        ),
        joint=report(
            "results/figures/workload-joint.png",
            caption="../report/workload-joint.rst",
            category="Workload",
        ),
        run="results/runs/workload.json",
    params:
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["workload"]["tokenizer"],
        max_sessions=config["workload"]["max_sessions"] or 0,
    log:
        "results/logs/notebooks/02-workload.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m papermill {input.notebook:q} {output.notebook:q} --cwd {params.root:q} -k python3 "
        "-p archive {input.trajectories:q} -p tokenizer {params.tokenizer:q} "
        "-p max_sessions {params.max_sessions} -p results_dir results > {log:q} 2>&1"
