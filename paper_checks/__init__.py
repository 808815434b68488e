"""Each claim of the paper as an executable check with a verdict and its evidence (``dfl-check``).

A check returns ``holds``, ``violated`` or ``inconclusive`` with the numbers behind it; a
violated claim is a finding, not a crash. Uses ``bounds`` and ``sim``; never the reverse.
"""
