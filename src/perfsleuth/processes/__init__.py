"""Process pathologies: which process misbehaves? (Kaminski 2003; DESIGN §2.4)

* :mod:`.rules` — the rules file (per-OS loop lines, groups, exceptions) and its defaults;
* :mod:`.periods` — one node's frame as per-period matrices;
* :mod:`.kernels` — ramp and saw-tooth kernels (numpy only);
* :mod:`.checks` — the seven per-node checks, pure functions;
* :mod:`.scanner` — the per-node scan and its map over a frame's nodes (the fleet runner
  maps the same function);
* :mod:`.detector` — :class:`~.detector.ProcessDetector`, every check in one pass;
* :mod:`.report` — the series behind each finding; :mod:`.cli` — ``perfsleuth processes``.
"""

from perfsleuth.analysis import Family

FAMILY = Family(
    name="processes",
    title="Process pathologies (Kaminski)",
    question="Which process is misbehaving?",
    contract="process",
    detector="perfsleuth.processes.detector:ProcessDetector",
    section="perfsleuth.processes.report:section",
    kinds={
        "cpu_loop": "Ask the owner to stop or restart the looping process.",
        "constrained_loop": "Several processes spin on a full machine: stop the loops to give "
        "the CPU back to the real work.",
        "hum": "Check that the steady consumer is needed and how often it polls.",
        "memory_ramp": "Plan a restart before memory runs out and report the leak.",
        "saw_tooth": "Growth hidden by restarts or truncation: fix the growth or confirm the "
        "resets are intended.",
        "cap_exceeded": "Throttle or reschedule the group that exceeds its share of the box.",
        "capture_ratio": "CPU is used outside the processes sampled: check the collector "
        "(short-lived processes, kernel work, another container).",
    },
    checks=(
        "cpu_loop",
        "constrained_loop",
        "hum",
        "memory_ramp",
        "saw_tooth",
        "cap_exceeded",
        "capture_ratio",
    ),
    about="node",
)
