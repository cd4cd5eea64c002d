"""The change-point kernels: the hierarchical search (:mod:`.search`) and its FPA null
distribution (:mod:`.fpa`, with the shipped table in ``data/``). numpy in, frozen results out."""
