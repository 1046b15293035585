"""lanes: online inference on shared GPUs.

A host-wide shortest-job-first scheduler (the policy engine, in Rust, reached through the private
native module ``lanes._core``), the simulator that tries its policies on a model of a host
(:mod:`lanes.sim`), and the command line (:mod:`lanes.cli`).
"""
