#!/usr/bin/env bash
# CMU ARCTIC parallel voice conversion (default bdl -> slt).
#   ./run.sh --db_root /path/to/cmu_arctic      use a local copy (official layout, wav or flac)
#   ./run.sh                                     download the official release of --src and --tgt
#   ./run.sh --stage 3 train.max_minutes=10      any stage range; key=value goes to the training config
# Everything but data preparation lives in the shared recipes/vc1/vc.sh.
set -euo pipefail
cd "$(dirname "$0")"
exec ./vc.sh "$@"
