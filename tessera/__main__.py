"""``python -m tessera``: the ``tessera`` command line."""

import sys

from tessera.cli.main import main

sys.exit(main())
