#!/usr/bin/env bash
# Prepare a GPU run on a machine that cannot reach a package index (this workplace's device
# lease): pinned wheels into .whl/, xz-compressed tokenizer files and the trajectory archive
# into .dev/ (both git-ignored, carried to the machine), and a default plan.
# Usage, from the repo root after `toktier build` and `toktier fetch-data mini-swe-agent`:
#   tools/gpu-lease/prepare.sh mistral-sp-v3 qwen3 cl100k deepseek-v4 mistral-sp-v1
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
names=("${@:-mistral-sp-v3 qwen3 cl100k deepseek-v4 mistral-sp-v1}")
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
# The ninth lease (H200, e97864c) certified the default engine of qwen3, llama3, gpt-oss,
# tekken and qwen3.6 (0 divergences, five campaigns side by side in 197 s) and measured one
# F3 run where graph replay's contended P99 (mistral-sp-v3, 9.39 ms) exceeded eager's (8.62):
# two stalled requests of 100.  This plan settles it with 1,000 tail requests per method on
# mistral-sp-v3 and qwen3 (100K single requests only, 3 samples, no CPU rows), then
# certifies the default engine of the other four (cl100k and deepseek-v4 last at c28a7b7,
# the two SentencePiece models at 17254b4).
# Run as: tools/gpu-lease/prepare.sh mistral-sp-v3 qwen3 cl100k deepseek-v4 mistral-sp-v1
for n in mistral-sp-v3 qwen3; do
  step tail-$n 200 python3 -m toktier bench-gpu --tokenizers $n --sizes 100000 --samples 3 \
      --tail-samples 1000 --corpus-chars 200000 --repeats 1 --no-cpu --quiet \
      --out $OUT/gpu-tail1000-$n.json
done
for n in cl100k deepseek-v4 mistral-sp-v3 mistral-sp-v1; do
  step cert-$n 300 python3 -m toktier certify-engine $n --device gpu --chars 1000000 \
      --quiet --out $OUT/engine-gpu-$n.json &
  sleep 2
done
wait
PLAN
du -sh .whl .dev
echo "Untrack results/ for the transfer (64 MiB limit), run, then restore:"
echo "  echo /results/ >> .git/info/exclude && git rm -r -q --cached results"
echo "  run: TOKTIER_SOURCE_COMMIT=$(git rev-parse HEAD) BUDGET=540 bash tools/gpu-lease/run.sh   (carry .whl .dev)"
echo "  git reset -q && sed -i '/^\/results\/\$/d' .git/info/exclude"
