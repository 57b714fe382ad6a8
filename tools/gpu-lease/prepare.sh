#!/usr/bin/env bash
# Prepare a GPU run on a machine that cannot reach a package index (this workplace's device
# lease): pinned wheels into .whl/, xz-compressed tokenizer files and the trajectory archive
# into .dev/ (both git-ignored, carried to the machine), and a default plan.
# Usage, from the repo root after `toktier build` and `toktier fetch-data mini-swe-agent`:
#   tools/gpu-lease/prepare.sh qwen3 llama3 gpt-oss tekken
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
names=("${@:-qwen3 llama3 gpt-oss tekken}")
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# numpy < 2.5 for numba-cuda 0.30.4; the reference pinned; Gigatoken for the bench's rows
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plat[@]}" -d .whl numpy==2.4.6 tokenizers==0.23.3 \
    numba-cuda==0.30.4 gigatoken==0.10.0 pycountry==26.2.16
mkdir -p .dev/tok
for n in ${names[@]}; do
    xz -T0 -6 -c "data/build/tokenizers/$n/tokenizer.json" > ".dev/tok/$n.json.xz"
done
cp data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz .dev/
[ -e .dev/plan.sh ] || cat > .dev/plan.sh <<'PLAN'
# step NAME CAP_SECONDS command...   (each step gets what is left of BUDGET, capped)
# Campaigns side by side: each is mostly one Python thread, so several fit the 16 cores (the
# eighth lease ran five at once in 163 s, each compiling for itself on the fresh machine);
# a bench runs alone, after them.  Every tokenizer is certified with 16-bit uploads (seventh
# and eighth leases); qwen3, llama3, gpt-oss and tekken's default engine was last certified
# at c3c171c, before the CPU engine's NFC dedup (which the GPU's NFC handoff reaches).
# Run as: tools/gpu-lease/prepare.sh qwen3 llama3 gpt-oss tekken
for n in qwen3 llama3 gpt-oss tekken; do
  step cert-$n 400 python3 -m toktier certify-engine $n --device gpu --chars 1000000 \
      --quiet --out $OUT/engine-gpu-$n.json &
  sleep 2
done
wait
step bench-qwen3 200 python3 -m toktier bench-gpu --tokenizers qwen3 --samples 9 \
    --tail-samples 100 --quiet --out $OUT/gpu-fresh-str-qwen3.json
PLAN
du -sh .whl .dev
echo "Untrack results/ for the transfer (64 MiB limit), run, then restore:"
echo "  echo /results/ >> .git/info/exclude && git rm -r -q --cached results"
echo "  run: TOKTIER_SOURCE_COMMIT=$(git rev-parse HEAD) BUDGET=540 bash tools/gpu-lease/run.sh   (carry .whl .dev)"
echo "  git reset -q && sed -i '/^\/results\/\$/d' .git/info/exclude"
