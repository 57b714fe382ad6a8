rule certify_repair:
    """Oracle + adversarial + replay campaigns for one tokenizer (zero divergence required)."""
    input:
        tokenizer="data/build/tokenizers/{name}/tokenizer.json",
        trajectories=TRAJECTORIES,
    output:
        f"{RESULTS}/runs/repair/{{name}}.json",
    params:
        py=PY,
        home=DATA_HOME,
        oracle=config["repair"]["oracle_trials"],
        adversarial=config["repair"]["adversarial_examples"],
        replay=config["repair"]["replay_sessions"] or 0,
        seed=config["certification"]["seed"],
    benchmark:
        f"{RESULTS}/benchmarks/repair/{{name}}.tsv"
    log:
        f"{RESULTS}/logs/repair/{{name}}.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier certify-repair {wildcards.name:q} "
        "--oracle-trials {params.oracle} --adversarial-examples {params.adversarial} "
        "--replay-sessions {params.replay} --archive {input.trajectories:q} --seed {params.seed} "
        "--out {output:q} > {log:q} 2>&1"


rule notebook_repair_latency:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/03-repair-latency.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["latency"]["tokenizer"]),
        families=[tokenizer_json(n) for n in config["latency"]["families"]],
    output:
        notebook=f"{RESULTS}/notebooks/03-repair-latency.ipynb",
        table=f"{RESULTS}/tables/repair-latency.csv",
        run=f"{RESULTS}/runs/repair-latency.json",
        figure=report(
            f"{RESULTS}/figures/repair-latency.png",
            caption="../report/repair-latency.rst",
            category="Repair",
        ),
        families_table=f"{RESULTS}/tables/repair-latency-families.csv",
        families_run=f"{RESULTS}/runs/repair-latency-families.json",
        families_figure=report(
            f"{RESULTS}/figures/repair-latency-families.png",
            caption="../report/repair-latency-families.rst",
            category="Repair",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["latency"]["tokenizer"],
        families=json.dumps(config["latency"]["families"]),
        contexts=json.dumps(config["latency"]["contexts"]),
        sessions=config["latency"]["sessions"],
        appends=config["latency"]["appends"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/03-repair-latency.tsv"
    log:
        f"{RESULTS}/logs/notebooks/03-repair-latency.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-y 'contexts: {params.contexts}'",
            "-y 'families: {params.families}'",
            "-p sessions {params.sessions}",
            "-p appends {params.appends}",
        )


rule notebook_repair_behavior:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/04-repair-behavior.ipynb",
        runs=expand(f"{RESULTS}/runs/repair/{{name}}.json", name=REPAIRABLE),
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["latency"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/04-repair-behavior.ipynb",
        certification=f"{RESULTS}/tables/repair-certification.csv",
        behavior=f"{RESULTS}/tables/repair-behavior.csv",
        sweep=f"{RESULTS}/tables/delta-sweep.csv",
        figure=report(
            f"{RESULTS}/figures/repair-behavior.png",
            caption="../report/repair-behavior.rst",
            category="Repair",
        ),
        sweep_figure=report(
            f"{RESULTS}/figures/delta-sweep.png",
            caption="../report/delta-sweep.rst",
            category="Repair",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        runs=lambda wildcards, input: ",".join(input.runs),
        tokenizer=config["latency"]["tokenizer"],
        contexts=json.dumps(config["sweep"]["contexts"]),
        deltas=json.dumps(config["sweep"]["deltas"]),
        sessions=config["sweep"]["sessions"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/04-repair-behavior.tsv"
    log:
        f"{RESULTS}/logs/notebooks/04-repair-behavior.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p runs {params.runs:q}",
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-y 'sweep_contexts: {params.contexts}'",
            "-y 'sweep_deltas: {params.deltas}'",
            "-p sweep_sessions {params.sessions}",
        )


rule notebook_state_memory:
    input:
        notebook="build/notebooks/05-state-memory.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["latency"]["tokenizer"]),
    output:
        notebook=f"{RESULTS}/notebooks/05-state-memory.ipynb",
        table=f"{RESULTS}/tables/state-memory.csv",
        ttl=f"{RESULTS}/tables/ttl-hits.csv",
        figure=report(
            f"{RESULTS}/figures/state-memory.png",
            caption="../report/state-memory.rst",
            category="Repair",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["latency"]["tokenizer"],
        sessions=config["memory"]["sessions"],
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/05-state-memory.tsv"
    log:
        f"{RESULTS}/logs/notebooks/05-state-memory.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-p sessions {params.sessions}",
        )


rule notebook_large_appends:
    # Timings: the job takes every core, so no other job of the workflow runs beside it.
    threads: workflow.cores
    input:
        notebook="build/notebooks/13-large-appends.ipynb",
        trajectories=TRAJECTORIES,
        tokenizer=tokenizer_json(config["large_appends"]["tokenizer"]),
        # committed by hand from a GPU machine (bench-gpu): route C's cells
        gpu_records="results/runs/engine-gpu",
    output:
        notebook=f"{RESULTS}/notebooks/13-large-appends.ipynb",
        table=f"{RESULTS}/tables/large-appends.csv",
        routes=f"{RESULTS}/tables/large-appends-routes.csv",
        run=f"{RESULTS}/runs/large-appends.json",
        figure=report(
            f"{RESULTS}/figures/large-appends.png",
            caption="../report/large-appends.rst",
            category="Repair",
        ),
    params:
        results=lambda w, output: Path(output.notebook).parent.parent,  # its tree
        py=PY,
        home=DATA_HOME,
        root=str(ROOT),
        tokenizer=config["large_appends"]["tokenizer"],
        contexts=json.dumps(config["large_appends"]["contexts"]),
        deltas=json.dumps(config["large_appends"]["deltas"]),
        sessions=config["large_appends"]["sessions"],
        gpu_evidence=lambda wc, input: Path(input.gpu_records).parent.parent,
    benchmark:
        f"{RESULTS}/benchmarks/notebooks/13-large-appends.tsv"
    log:
        f"{RESULTS}/logs/notebooks/13-large-appends.log",
    conda:
        "../../environment.yml"
    shell:
        papermill(
            "-p archive {input.trajectories:q}",
            "-p tokenizer {params.tokenizer:q}",
            "-y 'contexts: {params.contexts}'",
            "-y 'deltas: {params.deltas}'",
            "-p sessions {params.sessions}",
            "-p gpu_evidence_dir {params.gpu_evidence:q}",
        )
