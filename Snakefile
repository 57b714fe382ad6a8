# toktier reproduction workflow.  Run: snakemake --cores all   (config/config.yaml = kick-the-tires)
# Everything lives in workflow/rules/; this file only includes them.

report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/artifacts.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/certify.smk"
include: "workflow/rules/repair.smk"
include: "workflow/rules/engine.smk"
include: "workflow/rules/lopt.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/verifier.smk"
include: "workflow/rules/requestpath.smk"
include: "workflow/rules/notebooks.smk"
include: "workflow/rules/compare.smk"


rule all:
    input:
        ALL_OUTPUTS,
        rules.claims.output,
        [] if RESULTS == EVIDENCE else rules.compare_with_evidence.output,
    default_target: True
