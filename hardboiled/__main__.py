"""``python -m hardboiled`` runs the command line."""

from .cli import main

main()
