"""``python -m fabricsim`` is the ``fabricsim`` command."""

import sys

from .cli import main

sys.exit(main())
