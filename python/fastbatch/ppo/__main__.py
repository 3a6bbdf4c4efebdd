"""`python -m fastbatch.ppo <preset-or-env-id> ...` is `fastbatch train ...`."""

import sys

from fastbatch.cli import main

args = sys.argv[1:]
sys.exit(main(args if args[:1] in (["train"], ["eval"]) else ["train", *args]))
