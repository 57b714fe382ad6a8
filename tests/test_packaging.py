"""The repository's promises about itself: pins agree, README and CI run the same tests, config validates."""

import fcntl
import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _snakemake(*args: str) -> subprocess.CompletedProcess:
    """``python -m snakemake ARGS`` in the repository, one at a time across processes: the
    test suite runs in pytest-xdist workers, and snakemake keeps its state (locks, metadata)
    in the working directory's ``.snakemake``."""
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]  # one lock per checkout
    lock = Path(tempfile.gettempdir()) / f"toktier-snakemake-{key}.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed
        return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT,
                              capture_output=True, text=True)  # fmt: skip


def _pyproject_requirements() -> set[str]:
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = set(proj["dependencies"])
    for extra, items in proj["optional-dependencies"].items():
        if extra in ("gpu", "gpu13", "baselines"):
            continue  # not installable on every machine; not part of the conda env
        reqs |= {r for r in items if not r.startswith("toktier[")}
    return {r.replace(" ", "") for r in reqs}


def test_environment_yml_matches_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    env_reqs = {r.replace(" ", "") for r in pip_section if not r.startswith("-e")}
    assert env_reqs == _pyproject_requirements()


def test_reference_and_jit_pins_are_exact():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for pkg in ("tokenizers", "numba", "numba-cuda"):
        assert any(re.fullmatch(rf"{pkg}==[\d.]+", d) for d in deps), pkg


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    quick = [
        line for b in blocks for line in b.splitlines() if line.strip() and not line.startswith("#")
    ]
    test_cmd = next(line for line in quick if "pytest" in line)
    main_cmd = next(line for line in quick if "snakemake --cores all" in line)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd.strip() in ci
    assert main_cmd != test_cmd


def test_snakefile_only_includes_rules():
    lines = [
        line
        for line in (ROOT / "Snakefile").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    includes = [line for line in lines if line.startswith("include:")]
    assert includes and all(
        line.startswith(("include:", "report:", "rule all", " ", "\t")) for line in lines
    )


def _load(path):
    return yaml.safe_load((ROOT / path).read_text())


def _overlaid(base: dict, overlay: dict) -> dict:
    """Nested keys of ``overlay`` replace ``base``'s, as snakemake merges ``--configfile``."""
    out = dict(base)
    for k, v in overlay.items():
        out[k] = _overlaid(base.get(k, {}), v) if isinstance(v, dict) else v
    return out


@pytest.mark.parametrize("overlay", [None, "config/full.yaml"])
def test_configs_validate_against_the_schema(overlay):
    schema = _load("workflow/schemas/config.schema.yaml")
    cfg = _load("config/config.yaml")
    if overlay:
        cfg = _overlaid(cfg, _load(overlay))
    jsonschema.validate(cfg, schema)
    bad = dict(cfg, tokenizers=["gpt-17"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_schema_documents_every_key_with_its_default():
    """Every key has a description; every leaf's default is the value in config/config.yaml."""
    schema = _load("workflow/schemas/config.schema.yaml")
    cfg = _load("config/config.yaml")
    assert set(schema["properties"]) == set(cfg) == set(schema["required"])
    for key, spec in schema["properties"].items():
        assert spec.get("description"), key
        if spec["type"] == "object":
            assert set(spec["properties"]) == set(cfg[key]), key
            for sub, leaf in spec["properties"].items():
                assert leaf.get("description"), (key, sub)
                assert "default" in leaf and leaf["default"] == cfg[key][sub], (key, sub)
        else:
            assert spec.get("default") == cfg[key], key


def test_full_config_overlays_only_what_it_changes():
    base, full = _load("config/config.yaml"), _load("config/full.yaml")
    for key, value in full.items():
        assert key in base, key
        if not isinstance(value, dict):  # a top-level leaf (results_dir)
            assert base[key] != value, key
            continue
        for sub, v in value.items():
            assert sub in base[key] and base[key][sub] != v, (key, sub)


def test_workflow_lints_clean():
    proc = _snakemake("--lint", "--cores", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations" in proc.stdout + proc.stderr


def test_package_discovery_includes_every_subpackage():
    """pyproject's ``packages.find`` ships every package under ``toktier/`` (engine.gpu too)."""
    from setuptools import find_packages

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = set(find_packages(where=str(ROOT), **find["find"]))
    on_disk = {
        ".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "toktier").rglob("__init__.py")
    }
    assert "toktier.engine.gpu" in on_disk and on_disk <= found, on_disk - found


# Parameters that name files of the run (paths differ by design between a notebook opened
# by hand on the committed evidence and a workflow run into its own tree).
_PATH_PARAMS = {"archive", "results_dir", "runs", "engine_runs", "gpu_evidence_dir"}


def _notebook_defaults(path: Path) -> dict:
    """The parameters cell of a jupytext notebook, evaluated (literals and arithmetic only)."""
    import ast
    import re

    cell = re.search(r'# %% tags=\["parameters"\]\n(.*?)\n# %%', path.read_text(), re.S).group(1)
    out = {}
    for node in ast.parse(cell).body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, (path, ast.dump(node))
        expr = compile(ast.Expression(node.value), str(path), "eval")
        out[node.targets[0].id] = eval(expr, {"__builtins__": {}})
    return out


def _papermill_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


def test_notebook_defaults_equal_the_default_config():
    """Every notebook rule passes every parameter, and each default equals what the default
    config passes: opening a notebook by hand runs the kick-the-tires experiment."""
    import shlex

    proc = _snakemake("-n", "-p", "--forceall", "--cores", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    commands = [ln for ln in proc.stdout.splitlines() if "-m papermill" in ln]
    seen = set()
    for line in commands:
        toks = shlex.split(line.split(" > ")[0])
        nb = next(t for t in toks if t.startswith("build/notebooks/"))
        source = ROOT / "notebooks" / (Path(nb).stem + ".py")
        defaults = _notebook_defaults(source)
        passed = {}
        for k, tok in enumerate(toks):
            if tok == "-p":
                passed[toks[k + 1]] = _papermill_value(toks[k + 2])
            elif tok == "-y":
                passed.update(yaml.safe_load(toks[k + 1]))
        assert set(passed) == set(defaults), (source.name, set(passed) ^ set(defaults))
        for name, value in passed.items():
            if name not in _PATH_PARAMS:
                assert defaults[name] == value, (source.name, name, defaults[name], value)
        seen.add(source.name)
    assert len(seen) == len(list((ROOT / "notebooks").glob("[0-9][0-9]-*.py"))), seen


def test_full_config_dry_runs_through_the_slurm_profile():
    """profiles/slurm: every job of the full config is planned for the SLURM executor with a
    declared memory and run time, and the timing experiments get a node's worth of threads."""
    import re

    proc = _snakemake("-n", "--nolock", "--forceall", "--cores", "64",
                      "--workflow-profile", "profiles/slurm", "--configfile", "config/full.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "profiles/slurm" in out
    jobs = re.findall(r"\n(?:local)?rule (\w+):\n(.*?)(?=\n\n|\nShell command)", out, re.S)
    rules = {name for name, _ in jobs}
    declared = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())["set-resources"]
    assert rules - {"all"} <= set(declared), rules - set(declared)
    for name, body in jobs:
        if name == "all":
            continue
        assert re.search(r"mem_mb=\d+", body) and re.search(r"runtime=\d+", body), (name, body)
        if name.startswith("notebook_") and "threads: workflow.cores" in _rule_source(name):
            assert "threads: 16" in body, (name, body)


def _rule_source(name: str) -> str:
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        text = path.read_text()
        if f"rule {name}:" in text:
            return text.split(f"rule {name}:", 1)[1].split("\nrule ", 1)[0]
    raise AssertionError(name)


def test_report_builds_from_the_committed_evidence(tmp_path):
    """``snakemake --report`` on the full config (the committed results) holds every figure a
    rule declares with ``report()``, each with its caption file."""
    import re

    declared = {}
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for fig, caption in re.findall(
            r'report\(\s*f"\{RESULTS\}/figures/([\w.-]+)",\s*caption="([^"]+)"', path.read_text()
        ):
            declared[fig] = (path.parent / caption).resolve()
    assert len(declared) >= 13, declared
    for fig, caption in declared.items():
        assert caption.is_file() and caption.read_text().strip(), (fig, caption)
    out = tmp_path / "report.html"
    proc = _snakemake("--report", str(out), "--cores", "1", "--configfile", "config/full.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = out.read_text()
    for fig in declared:
        assert fig in html, fig


def test_committed_notebooks_carry_no_machine_paths_or_widget_warnings():
    """The executed notebooks of the evidence read the same on any machine: no absolute
    paths of the machine that ran them, no "IProgress not found" warnings (ipywidgets is a
    dependency, so progress bars render as widgets)."""
    import re

    books = sorted((ROOT / "results" / "notebooks").glob("*.ipynb"))
    assert len(books) == len(list((ROOT / "notebooks").glob("[0-9][0-9]-*.py")))
    machine_path = re.compile(r"(^|[^\w.])/(home|work|root|tmp|Users)/")
    for nb in books:
        text = nb.read_text(encoding="utf-8")
        assert not machine_path.search(text), (nb.name, machine_path.search(text))
        assert "TqdmWarning" not in text and "IProgress not found" not in text, nb.name


def test_jupyter_lab_opens_every_notebook_source_as_a_notebook():
    """A headless ``jupyter lab`` serves each ``notebooks/*.py`` as a notebook (jupytext's
    contents manager), its parameters cell tagged for papermill."""
    import json
    import os
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.token=t", "--ServerApp.root_dir=notebooks"]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    server = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/api/contents"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}?token=t", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "lab did not start"
                time.sleep(0.5)
        sources = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.py"))
        assert len(sources) >= 11
        for name in sources:
            url = f"{base}/{name}?type=notebook&token=t"
            with urllib.request.urlopen(url, timeout=30) as r:
                nb = json.load(r)
            cells = nb["content"]["cells"]
            assert nb["type"] == "notebook" and len(cells) > 3, name
            tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
            assert len(tagged) == 1 and tagged[0]["cell_type"] == "code", name
    finally:
        server.terminate()
        server.wait(timeout=30)
