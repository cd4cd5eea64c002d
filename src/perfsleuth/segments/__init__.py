"""Anomaly, workload change or application change? (Cherkasova et al. 2008; DESIGN §2.3)

* :mod:`.kernels` — optimal segmentation of a regression (:mod:`.kernels.segmentation`), the
  CPU model with stepwise selection (:mod:`.kernels.cpumodel`) and application signatures
  (:mod:`.kernels.signature`); numpy/scipy only;
* :mod:`.detector` — :class:`~.detector.SegmentDetector`; :mod:`.model`, the pieces and
  boundaries it works with; :mod:`.explain`, its findings in words;
* :mod:`.report` — CPU segments and signature comparisons; :mod:`.cli` — ``perfsleuth
  segments``.
"""

from perfsleuth.analysis import Family

FAMILY = Family(
    name="segments",
    title="Workload segments (Cherkasova et al.)",
    question="Is it an anomaly, a workload change or an application change?",
    contract="workload",
    detector="perfsleuth.segments.detector:SegmentDetector",
    section="perfsleuth.segments.report:section",
    kinds={
        "workload_anomaly": "The workload does not explain the CPU used: look in that period "
        "for another consumer (a hog, a backup, a stuck job).",
        "workload_change": "Nothing to fix in the application: the workload moved. Check "
        "capacity for the new mix.",
        "application_change": "Review the release or configuration change at that time; the "
        "signature comparison names the transaction types that got slower.",
    },
    checks=("workload_segments",),
    about="service",
)
