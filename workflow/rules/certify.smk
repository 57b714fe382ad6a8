rule certify_conversion:
    """Converted tokenizers vs tiktoken on >= 1M characters of real mixed text, plus every vocabulary entry."""
    input:
        tokenizers=[tokenizer_json(n) for n in CONVERTED],
        trajectories=TRAJECTORIES,
    output:
        run=f"{RESULTS}/runs/conversion-certification.json",
        table=f"{RESULTS}/tables/conversion-certification.csv",
    params:
        py=PY,
        home=DATA_HOME,
        chars=config["certification"]["conversion_chars"],
        seed=config["certification"]["seed"],
        names=" ".join(CONVERTED),
    benchmark:
        f"{RESULTS}/benchmarks/certify/conversion.tsv"
    log:
        f"{RESULTS}/logs/certify/conversion.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier certify-conversion {params.names} --chars {params.chars} --seed {params.seed} "
        "--out {output.run:q} --table {output.table:q} > {log:q} 2>&1"
