"""`python -m vc.cli` (and `torchrun -m vc.cli train ...`): the same as the `vc` command."""

import sys

from vc.cli import main

if __name__ == "__main__":
    sys.exit(main())
