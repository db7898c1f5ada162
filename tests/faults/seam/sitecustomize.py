"""Arms the fault seam in a spawned process when ``OPM_FAULT_ROOT`` is set (test-only)."""

import os
import sys

if os.environ.get("OPM_FAULT_ROOT"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import faultseam

    faultseam.install_from_env()
