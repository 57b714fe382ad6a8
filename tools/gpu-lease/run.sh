#!/usr/bin/env bash
# On the GPU machine (see prepare.sh): install the carried wheels, unpack the tokenizers,
# run .dev/plan.sh's steps within BUDGET seconds, pack the logs; results land in $OUT.
START=$(date +%s)
DEADLINE=$((START + ${BUDGET:-540}))
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKTIER_HOME=/tmp/tkhome \
    TOKTIER_DATA_MIRROR=$PWD/.dev OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/tkhome/archives
NAMES=""
for f in .dev/tok/*.json.xz; do
    n=$(basename "$f" .json.xz); NAMES="$NAMES $n"; mkdir -p /tmp/tkhome/tokenizers/$n
    xz -dc "$f" > /tmp/tkhome/tokenizers/$n/tokenizer.json
done
cp .dev/*.tar.xz /tmp/tkhome/archives/
ARC=$(ls /tmp/tkhome/archives/*.tar.xz | head -1)
nvidia-smi -L
python3 -c "import numpy, numba, numba_cuda, tokenizers, cupy; print('numpy', numpy.__version__,
'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'tokenizers',
tokenizers.__version__, 'cupy', cupy.__version__)"
step() {  # step NAME CAP command...: skipped when under a minute is left
    local name=$1 cap=$2; shift 2
    local left=$((DEADLINE - $(date +%s)))
    [ $left -lt 60 ] && { echo "== $name skipped ($left s left)"; return; }
    [ $cap -gt $left ] && cap=$left
    echo "== $name (cap $cap s) at +$(( $(date +%s) - START )) s"
    timeout -k 5 $cap "$@" > $OUT/$name.log 2>&1
    echo "== $name rc=$? at +$(( $(date +%s) - START )) s"; tail -n 2 $OUT/$name.log
}
source .dev/plan.sh
(cd $OUT && tar czf logs.tgz *.log && rm -f *.log)
ls -la $OUT
