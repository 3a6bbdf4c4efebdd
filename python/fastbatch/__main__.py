"""`python -m fastbatch --includedir | --cmakedir`: paths for building native env plugins."""

from __future__ import annotations

import argparse
import sys

import fastbatch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastbatch", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--includedir", action="store_true", help="print the public header folder")
    group.add_argument("--cmakedir", action="store_true", help="print the CMake package folder")
    group.add_argument("--version", action="store_true", help="print the fastbatch version")
    args = parser.parse_args(argv)
    if args.includedir:
        print(fastbatch.get_include())
    elif args.cmakedir:
        print(fastbatch.get_cmake_dir())
    else:
        print(fastbatch.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
