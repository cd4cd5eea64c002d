"""The bottleneck kernels: units and the safe formula compiler (:mod:`.units`, :mod:`.expr`), the
model file and its compiled form (:mod:`.spec`, :mod:`.model`), priors, the error model,
inference, calibration profiles and upgrade analysis. numpy/scipy in, frozen results out."""
