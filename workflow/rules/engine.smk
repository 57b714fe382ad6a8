BYTE_BPE = ENGINE_TOKENIZERS


rule certify_engine:
    """Split-level and ID-level (with spans) campaign of the numba engine; zero divergence required."""
    input:
        tokenizer="data/build/tokenizers/{name}/tokenizer.json",
        trajectories=TRAJECTORIES,
    output:
        f"{RESULTS}/runs/engine/{{name}}.json",
    params:
        py=PY,
        home=DATA_HOME,
        chars=config["engine"]["certification_chars"],
        stride=config["engine"]["codepoint_stride"],
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/certify/engine-{{name}}.tsv"
    log:
        f"{RESULTS}/logs/certify/engine-{{name}}.log",
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
        engine_runs=expand(f"{RESULTS}/runs/engine/{{name}}.json", name=BYTE_BPE),
        # committed by hand from a GPU machine (bench-gpu, certify-engine --device gpu)
        gpu_records="results/runs/engine-gpu",
    output:
        notebook=f"{RESULTS}/notebooks/06-full-tokenization.ipynb",
        table=f"{RESULTS}/tables/full-tokenization.csv",
        bulk=f"{RESULTS}/tables/bulk-throughput.csv",
        certification=f"{RESULTS}/tables/engine-certification.csv",
        run=f"{RESULTS}/runs/full-tokenization.json",
        figure=report(
            f"{RESULTS}/figures/full-tokenization.png",
            caption="../report/full-tokenization.rst",
            category="Engine",
        ),
        gpu_figure=report(
            f"{RESULTS}/figures/full-tokenization-gpu.png",
            caption="../report/full-tokenization-gpu.rst",
            category="Engine",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizers=json.dumps(config["full"]["tokenizers"]),
        contexts=json.dumps(config["full"]["contexts"]),
        samples=config["full"]["samples"],
        corpus_chars=config["full"]["corpus_chars"],
        engine_runs=lambda wc, input: json.dumps(list(input.engine_runs)),
        gpu_evidence=lambda wc, input: Path(input.gpu_records).parent.parent,
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/06-full-tokenization.tsv"
    log:
        f"{RESULTS}/logs/notebooks/06-full-tokenization.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-y 'tokenizers: {params.tokenizers}'",
            "-y 'contexts: {params.contexts}'",
            "-y 'engine_runs: {params.engine_runs}'",
            "-p samples {params.samples}",
            "-p corpus_chars {params.corpus_chars}",
            "-p gpu_evidence_dir {params.gpu_evidence:q}",
        )
