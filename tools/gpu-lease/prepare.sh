#!/usr/bin/env bash
# Prepare a GPU run on a machine that cannot reach a package index (this workplace's device
# lease): pinned wheels into .whl/, xz-compressed tokenizer files and the trajectory archive
# into .dev/ (both git-ignored, carried to the machine), and a default plan.
# Usage, from the repo root after `toktier build` and `toktier fetch-data mini-swe-agent`:
#   tools/gpu-lease/prepare.sh cl100k deepseek-v4 qwen3.6 mistral-sp-v3
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
names=("${@:-cl100k deepseek-v4 qwen3.6 mistral-sp-v3}")
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
# 16-bit uploads (GpuEngine(units=True)) are certified on the device for qwen3, llama3,
# gpt-oss and tekken (seventh lease, 2026-11-27, at c3c171c); the default stays off until the
# rest are: cl100k, deepseek-v4, qwen3.6 and the SentencePiece models.  A fresh machine
# compiles every CPU and GPU function in its first step: give that step room (~110 s more).
# Run as: tools/gpu-lease/prepare.sh cl100k deepseek-v4 qwen3.6 mistral-sp-v3
step cert-units-cl100k 230 python3 -m toktier certify-engine cl100k --device gpu --units \
    --chars 1000000 --quiet --out $OUT/engine-gpu-cl100k-units.json
step cert-units-deepseek-v4 130 python3 -m toktier certify-engine deepseek-v4 --device gpu \
    --units --chars 1000000 --quiet --out $OUT/engine-gpu-deepseek-v4-units.json
step cert-units-qwen3.6 150 python3 -m toktier certify-engine qwen3.6 --device gpu --units \
    --chars 1000000 --quiet --out $OUT/engine-gpu-qwen3.6-units.json
step cert-units-mistral-sp-v3 150 python3 -m toktier certify-engine mistral-sp-v3 \
    --device gpu --units --chars 1000000 --quiet --out $OUT/engine-gpu-mistral-sp-v3-units.json
PLAN
du -sh .whl .dev
echo "Untrack results/ for the transfer (64 MiB limit), run, then restore:"
echo "  echo /results/ >> .git/info/exclude && git rm -r -q --cached results"
echo "  run: TOKTIER_SOURCE_COMMIT=$(git rev-parse HEAD) BUDGET=540 bash tools/gpu-lease/run.sh   (carry .whl .dev)"
echo "  git reset -q && sed -i '/^\/results\/\$/d' .git/info/exclude"
