#!/usr/bin/env bash
# CMU ARCTIC parallel voice conversion (default bdl -> slt).
#   ./run.sh --db_root /path/to/cmu_arctic      use a local copy (official layout, wav or flac)
#   ./run.sh                                     download the official release of --src and --tgt
#   ./run.sh --stage 3 train.max_minutes=10      any stage range; key=value goes to the training config
# Everything but data preparation lives in the shared recipes/vc1/vc.sh.
set -euo pipefail
# Paths given relative to where you ran this (--db_root, --work, an existing --conf)
# stay valid after the cd into the recipe folder below.
args=()
while [ $# -gt 0 ]; do
    if [ $# -ge 2 ] && { [ "$1" = --db_root ] || [ "$1" = --work ] || { [ "$1" = --conf ] && [ -f "$2" ]; }; }; then
        args+=("$1" "$(realpath -m -- "$2")"); shift 2
    else
        args+=("$1"); shift
    fi
done
cd "$(dirname "$0")"
exec ./vc.sh "${args[@]+"${args[@]}"}"
