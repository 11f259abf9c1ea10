"""``python -m laser_repro.config FILE...``"""

import sys

from laser_repro.config import main

if __name__ == "__main__":
    sys.exit(main())
