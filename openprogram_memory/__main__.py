"""``python -m openprogram_memory …``: the ``openprogram`` console script, for a checkout without it installed."""

from .cli.entry import run

run()
