"""`python3 -m gpusched`: the same CLI as the `gpusched` command."""

from .cli import main

main()
