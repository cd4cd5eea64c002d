"""One tool, end to end: ``perfsleuth analyze`` (:mod:`.run`) and ``watch`` (:mod:`.watch`).

Both read the config's sources (:mod:`.sources`), run the chosen detector families, and keep
what they find in the store; the CLI functions live in :mod:`.cli`. Nothing heavy is imported
here, so registering the commands keeps ``perfsleuth --help`` fast.
"""
