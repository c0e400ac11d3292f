"""`python3 -m placesim ARGS...` runs the placesim binary with ARGS (found as placesim.find_binary() does)."""
import os
import sys

from ._runner import PlacesimError, find_binary


def main(argv):
    try:
        binary = find_binary()
    except PlacesimError as e:
        sys.exit(f"python3 -m placesim: {e}")
    os.execv(binary, [binary] + argv)


if __name__ == "__main__":
    main(sys.argv[1:])
