"""Glimpse's measuring tools as the package ``glimpse_tools`` (``tools/pyproject.toml``; the Makefile's
virtualenv installs it with ``pip install -e tools``): ``match`` (matches, SPRT), ``gauntlet``,
``puzzles``, ``suites`` (EPD), ``endgames``, ``scaling`` (MCTS playouts), and ``enginelib`` (engine
specs, clocks, reports) that they share. Each module also runs as a script (``tools/match.py ...``) or
with ``python -m glimpse_tools.match ...``. See tools/README.md.
"""
