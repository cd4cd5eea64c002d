"""The transaction mix: is response time explained by the workload? (Kelly 2005; DESIGN §2.2)

* :mod:`.kernels` — the transaction-mix model fitted by least absolute residuals or OLS
  (:func:`~.kernels.fit_mix_model`); numpy/scipy only;
* :mod:`.detector` — :class:`~.detector.MixAnomalyDetector`: windows the mix cannot explain
  (too slow, or too fast), offline and online;
* :mod:`.report` — observed against fitted, the ``|e|/y`` CDF, the timeline; :mod:`.cli` —
  ``perfsleuth workload``.
"""

from perfsleuth.analysis import Family

FAMILY = Family(
    name="workload",
    title="Transaction mix (Kelly)",
    question="Is the response time explained by the workload?",
    contract="workload",
    detector="perfsleuth.workload.detector:MixAnomalyDetector",
    section="perfsleuth.workload.report:section",
    kinds={
        "workload_anomaly": "The workload does not explain it: look in that window for a "
        "saturated resource, a stuck dependency or failing requests.",
    },
    checks=("workload_mix",),
    about="service",
)
