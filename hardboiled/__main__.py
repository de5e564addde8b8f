"""``python -m hardboiled`` runs the command line."""

from hardboiled.cli.main import main

main()
