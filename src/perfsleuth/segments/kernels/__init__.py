"""The segment kernels: optimal segmentation (:mod:`.segmentation`), the CPU model
(:mod:`.cpumodel`) and application signatures (:mod:`.signature`). numpy in, frozen results out."""
