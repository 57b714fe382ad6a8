# "Your run vs ours": a run into its own tree is checked against the committed evidence
# (exactness verdicts equal, methods in the same order; toktier.bench.compare states the
# rules).  The full config writes the evidence itself, so it has nothing to compare.
EVIDENCE = "results"


rule compare_with_evidence:
    input:
        ALL_OUTPUTS,
        evidence=f"{EVIDENCE}/tables",
    output:
        markdown=f"{RESULTS}/comparison.md",
        table=f"{RESULTS}/comparison.csv",
    params:
        py=PY,
        home=DATA_HOME,
        run=lambda wc, output: Path(output.markdown).parent,
        evidence=lambda wc, input: Path(input.evidence).parent,
    log:
        f"{RESULTS}/logs/comparison.log",
    conda:
        "../../environment.yml"
    shell:
        # exit status 1 only means "some check disagrees": the report says which
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier compare-runs {params.run:q} "
        "--evidence {params.evidence:q} > {log:q} 2>&1 || test $? -eq 1"


# CLAIMS.md computed from this run's tables (toktier.bench.claims states each verdict's rule).
rule claims:
    input:
        ALL_OUTPUTS,
    output:
        CLAIMS_FILE,
    params:
        py=PY,
        run=lambda wc: RESULTS,  # the results tree (the output may live elsewhere: CLAIMS.md)
    log:
        f"{RESULTS}/logs/claims.log",
    conda:
        "../../environment.yml"
    shell:
        "{params.py} -m toktier claims {params.run:q} --out {output:q} > {log:q} 2>&1"
