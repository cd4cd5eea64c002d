"""The change-point kernels, numpy in, frozen results out: the search (:mod:`.search`, which
runs the default search's steps), the statistic and its φ (:mod:`.statistic`), the level search
(:mod:`.level`, over :mod:`.seeded` intervals) and the checks after it (:mod:`.edges`), the
tests (:mod:`.significance`, with the FPA null distribution of :mod:`.fpa` and its table in
``data/``), the trend (:mod:`.trend`, :mod:`.bends`, :mod:`.kinks`, :mod:`.trend_steps`), the
spikes (:mod:`.spikes`), rounding (:mod:`.grid`) and the results (:mod:`.results`)."""
