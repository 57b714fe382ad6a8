#!/usr/bin/env bash
# Prepare a GPU run on a machine that cannot reach a package index (this workplace's device
# lease): pinned wheels into .whl/, xz-compressed tokenizer files and the trajectory archive
# into .dev/ (both git-ignored, carried to the machine), and a default plan.
# Usage, from the repo root after `toktier build` and `toktier fetch-data mini-swe-agent`:
#   tools/gpu-lease/prepare.sh [TOKENIZER ...]   (default: the nine the GPU serves)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
names=("${@:-qwen3 llama3 gpt-oss tekken qwen3.6 cl100k deepseek-v4 mistral-sp-v3 mistral-sp-v1}")
mkdir -p .git/info  # a fresh checkout may lack it
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# numpy < 2.5 for numba-cuda 0.30.4; the reference pinned; Gigatoken and fastokens for the bench's rows
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plat[@]}" -d .whl numpy==2.4.6 tokenizers==0.23.3 \
    numba-cuda==0.30.4 gigatoken==0.10.0 fastokens==0.3.5 pycountry==26.2.16
mkdir -p .dev/tok
for n in ${names[@]}; do
    xz -T0 -6 -c "data/build/tokenizers/$n/tokenizer.json" > ".dev/tok/$n.json.xz"
done
cp data/build/archives/mini-swe-agent-gemini3-swebench-verified.tar.xz .dev/
[ -e .dev/plan.sh ] || cat > .dev/plan.sh <<'PLAN'
# step NAME CAP_SECONDS command...   (each step gets what is left of BUDGET, capped)
# The tenth lease (H200, 6d3c94f) certified the default engine of all nine side by side (268 s
# with a bench before them) and made the first settled-allocator bench records (qwen3, llama3)
# and 1,000-request tails (F3 reproduced). This plan: mistral-sp-v3's Table 4 rows settled
# (its only rows are unsettled), then every default engine certified at this commit (skip the
# certifications when no engine file changed since 6d3c94f). At most 8 files come back: the
# certification records are packed into one archive.
# Run as: tools/gpu-lease/prepare.sh   (then run.sh, one call of ~450 s)
mkdir -p $OUT/c
step bench-mistral-sp-v3 150 python3 -m toktier bench-gpu --tokenizers mistral-sp-v3 \
    --samples 5 --tail-samples 100 --out $OUT/gpu-h200-settled-mistral-sp-v3.json
for n in qwen3 llama3 gpt-oss tekken qwen3.6 cl100k deepseek-v4 mistral-sp-v3 mistral-sp-v1; do
  step cert-$n 600 python3 -m toktier certify-engine $n --device gpu --chars 1000000 \
      --quiet --out $OUT/c/$n.json &
  sleep 1
done
wait
(cd $OUT && tar czf certs.tgz c && rm -rf c)
PLAN
du -sh .whl .dev
echo "Untrack results/ for the transfer (64 MiB limit), run, then restore:"
echo "  echo /results/ >> .git/info/exclude && git rm -r -q --cached results"
echo "  run: TOKTIER_SOURCE_COMMIT=$(git rev-parse HEAD) BUDGET=540 bash tools/gpu-lease/run.sh   (carry .whl .dev)"
echo "  git reset -q && sed -i '/^\/results\/\$/d' .git/info/exclude"
