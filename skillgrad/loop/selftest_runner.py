"""Run a package's `self_test` shell command inside the sandbox (its argv[1]); exit with its status."""

import subprocess
import sys

if __name__ == "__main__":
    sys.exit(subprocess.run(sys.argv[1], shell=True, check=False).returncode)
