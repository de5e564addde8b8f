"""``python -m hardboiled`` runs the command line."""

from hardboiled.cli.commands import main

main()
