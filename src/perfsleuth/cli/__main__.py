"""``python -m perfsleuth.cli``: the command line."""

from perfsleuth.cli import main

main()
