"""The seed papers' experiments as scenario builders.

Each module builds the scenarios behind one paper's figures, parameterised by scale,
and measures the quantity the paper plots. The test suite runs them small (``tests/
test_trends_*.py``) and checks the papers' trends; ``experiments/<paper>/`` runs them
larger and draws the figures. Keeping one builder for both means the checked trend and
the published experiment cannot drift apart.
"""

from . import collectives, common, mrc, stellar, udmp

__all__ = ["collectives", "common", "mrc", "stellar", "udmp"]
