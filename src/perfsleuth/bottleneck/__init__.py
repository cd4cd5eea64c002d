"""Bottlenecks: which resource limits the workload, and which upgrade fixes it? (Blake &
Breese 1995; DESIGN §2.5)

* :mod:`.kernels` — units and the safe formula compiler, the model file and its compiled form
  (a declarative TOML predicting OS counters from workload parameters), priors, the error
  model, inference (the most probable workload and its uncertainty), calibration profiles and
  upgrade analysis; numpy/scipy only;
* :mod:`.detector` — :class:`~.detector.BottleneckDetector`: counters averaged per window,
  inferred, grouped into episodes; :mod:`.explain`, its findings in words; :mod:`.importers`,
  other tools' counters in the model's names;
* :mod:`.linux` (this machine's counters), :mod:`.workloads`, :mod:`.measure` and
  :mod:`.verify` — calibration and verification with real synthetic workloads (fio);
* :mod:`.report` — inferred utilisation and the upgrade table; :mod:`.cli` — ``perfsleuth
  bottleneck``, ``calibrate``, ``verify``.
"""

from perfsleuth.analysis import Family

FAMILY = Family(
    name="bottleneck",
    title="Bottlenecks and upgrades (Blake & Breese)",
    question="What is the bottleneck, and which upgrade fixes it at the lowest cost?",
    contract="counter",
    detector="perfsleuth.bottleneck.detector:BottleneckDetector",
    section="perfsleuth.bottleneck.report:section",
    kinds={
        "bottleneck": "Relieve the saturated resource; the upgrade table gives the cheapest "
        "option.",
        "upgrade": "Compare the options by cost per unit of added throughput before buying.",
    },
    checks=("bottleneck",),
    about="node",
)
