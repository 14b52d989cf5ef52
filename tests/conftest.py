import os
import sys
from pathlib import Path

# Tests run against the source tree (after scripts/dev-build) or an installed wheel.
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path and os.environ.get("DS4KIT_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(REPO))
