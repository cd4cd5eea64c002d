"""Change points: when did performance change? (Berry & Hellerstein 1991; DESIGN §2.1)

* :mod:`.kernels` — the hierarchical search (:mod:`.kernels.search`) and the FPA null
  distribution of its statistic (:mod:`.kernels.fpa`); numpy only;
* :mod:`.detector` — :class:`~.detector.ChangePointDetector`: each series of a metric frame
  searched, one finding per change point and per large spike run;
* :mod:`.report` — one plot per series with its segments; :mod:`.cli` — ``perfsleuth
  changepoints``.
"""

from perfsleuth.analysis import Family

FAMILY = Family(
    name="changepoints",
    title="Change points (Berry & Hellerstein)",
    question="When did something change?",
    contract="metric",
    detector="perfsleuth.changepoints.detector:ChangePointDetector",
    section="perfsleuth.changepoints.report:section",
    kinds={
        "change_point": "Find what changed at that time (release, configuration, traffic) and "
        "compare the periods before and after.",
        "spike": "Find what happened at that moment (a burst of requests, a job, a failing "
        "dependency); the mean is unchanged by it.",
    },
    checks=("changepoint",),
)
