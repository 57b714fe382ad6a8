rule trajectory_archive:
    """The mini-swe-agent trajectories: from the mirror (or config data.url), sha256-verified."""
    output:
        TRAJECTORIES,
    params:
        py=PY,
        home=DATA_HOME,
        mirror=MIRROR,
        # --url only when configured (an empty quoted argument reads as a missing value)
        url=f"--url {shlex.quote(config['data']['url'])}" if config["data"].get("url") else "",
    log:
        f"{RESULTS}/logs/data/trajectories.log",
    conda:
        "../../environment.yml"
    shell:
        "TOKTIER_HOME={params.home:q} {params.py} -m toktier fetch-data mini-swe-agent --dest {output:q} "
        "--mirror {params.mirror:q} {params.url} > {log:q} 2>&1"
