"""Diagnosis under load: why a service does not go faster, found on the same run that measures it.

While a load level runs, a :class:`~lanes.diagnose.session.Session` records, for the server's
processes (a PID and its descendants):

- on-CPU and off-CPU stacks (:mod:`lanes.diagnose.stacks`: py-spy for Python processes, two
  recorders at once, one with ``--idle``; ``perf record -g`` for native ones);
- system calls by name, counted and timed (:mod:`lanes.diagnose.syscalls`: ``perf trace -s``,
  else ``strace -c``);
- CPU per core split user/system/softirq/idle, per process and for the host, and each process's
  threads and context switches over time (:mod:`lanes.diagnose.sampler`);

and the load client adds its own view, the dispersion of what it actually sent. Rules
(:mod:`lanes.diagnose.findings`) turn the evidence into **findings**, each with a stable code
and the frame or number it rests on. A tool that is missing or not permitted is skipped with one
line saying what and why (:mod:`lanes.diagnose.tools`); the load run's results never depend on
profiling succeeding. docs/diagnosis.md has the keys, files and rules.
"""
