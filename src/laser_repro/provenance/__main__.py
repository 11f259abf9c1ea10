"""``python -m laser_repro.provenance {provenance,lineage,sync-mtimes} ...``"""

import sys

from laser_repro.provenance import main

if __name__ == "__main__":
    sys.exit(main())
