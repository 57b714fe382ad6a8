BYTE_BPE = [n for n in TOKENIZERS if n != "bert-uncased"]


rule certify_engine:
    """Split-level and ID-level (with spans) campaign of the numba engine; zero divergence required."""
    input:
        tokenizer="data/build/tokenizers/{name}/tokenizer.json",
        trajectories=TRAJECTORIES,
    output:
        "results/runs/engine/{name}.json",
    params:
        py=PY,
        home=DATA_HOME,
        chars=config["engine"]["certification_chars"],
        stride=config["engine"]["codepoint_stride"],
        seed=config["certification"]["seed"],
    log:
        "results/logs/certify/engine-{name}.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier certify-engine {wildcards.name:q} "
        "--chars {params.chars} --codepoint-stride {params.stride} --seed {params.seed} --quiet "
        "--out {output:q} > {log:q} 2>&1"


rule notebook_full_tokenization:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/06-full-tokenization.ipynb",
        trajectories=TRAJECTORIES,
        tokenizers=[tokenizer_json(n) for n in config["full"]["tokenizers"]],
        engine_runs=expand("results/runs/engine/{name}.json", name=BYTE_BPE),
    output:
        notebook="results/notebooks/06-full-tokenization.ipynb",
        table="results/tables/full-tokenization.csv",
        bulk="results/tables/bulk-throughput.csv",
        certification="results/tables/engine-certification.csv",
        run="results/runs/full-tokenization.json",
        figure=report(
            "results/figures/full-tokenization.png",
            caption="../report/full-tokenization.rst",
            category="Engine",
        ),
    params:
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["full"]["tokenizers"]),
        contexts=json.dumps(config["full"]["contexts"]),
        samples=config["full"]["samples"],
        corpus_chars=config["full"]["corpus_chars"],
        engine_runs=lambda wc, input: json.dumps(list(input.engine_runs)),
    log:
        "results/logs/notebooks/06-full-tokenization.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m papermill {input.notebook:q} {output.notebook:q} "
        "--cwd {params.root:q} -k python3 -p archive {input.trajectories:q} "
        "-y 'tokenizers: {params.tokenizers}' -y 'contexts: {params.contexts}' "
        "-y 'engine_runs: {params.engine_runs}' -p samples {params.samples} "
        "-p corpus_chars {params.corpus_chars} -p results_dir results > {log:q} 2>&1"
