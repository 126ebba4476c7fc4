"""``python -m tessera.cli``: the ``tessera`` command line."""

import sys

from .main import main

sys.exit(main())
