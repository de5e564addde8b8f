"""``python -m hardboiled`` runs the command line."""

from hardboiled.cli import run

run()
