"""lanes._core.Scheduler: the policy engine as the server drives it (time passed in)."""

import pytest

from lanes._core import Scheduler
from lanes.errors import LanesError


def test_sjf_runs_the_shorter_job_first_on_a_freed_device():
    s = Scheduler("sjf:slack=off", [1])
    s.submit(1, model=0, batch=1, arrival_ns=0, cost_ns=50_000_000)
    assert s.dispatch(0) == [("run", 1, 0)]
    s.submit(2, model=0, batch=1, arrival_ns=1, cost_ns=50_000_000)
    s.submit(3, model=1, batch=1, arrival_ns=2, cost_ns=1_000_000)
    assert s.dispatch(3) == []  # the device is busy
    assert s.queued == 2
    assert s.complete(1, 10) == (0, 10)
    assert s.dispatch(10) == [("run", 3, 0)]


def test_fifo_keeps_arrival_order_and_balances_devices():
    s = Scheduler("fifo", [1, 1])
    for job, cost in ((1, 9), (2, 1), (3, 5)):
        s.submit(job, model=job, batch=1, arrival_ns=job, cost_ns=cost)
    assert s.dispatch(10) == [("run", 1, 0), ("run", 2, 1)]
    s.complete(2, 11)
    assert s.dispatch(11) == [("run", 3, 1)]


def test_expired_jobs_are_dropped_never_run():
    s = Scheduler("sjf", [1])
    s.submit(1, model=0, batch=1, arrival_ns=0, deadline_ns=5, cost_ns=1)
    assert s.dispatch(6) == [("drop", 1, "deadline_expired")]
    assert s.queued == 0


def test_edf_drops_jobs_that_cannot_finish():
    s = Scheduler("edf", [1])
    s.submit(1, model=0, batch=1, arrival_ns=0, deadline_ns=10, cost_ns=20)
    assert s.dispatch(1) == [("drop", 1, "deadline_unreachable")]


def test_estimates_learn_from_observed_runs_and_priors():
    s = Scheduler("sjf", [1], default_cost_ns=7)
    assert s.estimate(5, 1) == 7
    s.set_prior(0, fixed_ns=1000.0, per_item_ns=100.0)
    assert s.estimate(0, 10) == 2000
    s.observe(0, 4, 5000)
    assert s.estimate(0, 4) == 5000
    assert s.submit(1, model=0, batch=4, arrival_ns=0) == 5000


def test_cancel_eligible_devices_and_busy_time():
    s = Scheduler("fifo", [1, 1])
    s.submit(1, model=0, batch=1, arrival_ns=0, devices=[1], cost_ns=1)
    s.submit(2, model=0, batch=1, arrival_ns=0, cost_ns=1)
    assert s.cancel(2) and not s.cancel(2)
    assert s.dispatch(100) == [("run", 1, 1)]
    assert s.running_on(1) == 1 and s.running == 1
    assert s.busy_ns(1, 150) == 50


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: Scheduler("nope", [1]), "unknown_policy"),
        (lambda: Scheduler("sjf", []), "bad_device_count"),
        (lambda: Scheduler("fifo", [0]), "bad_capacity"),
        (lambda: Scheduler("fifo", [1], ewma_weight=0.0), "bad_argument"),
    ],
)
def test_bad_construction_names_the_problem(make, code):
    with pytest.raises(LanesError) as err:
        make()
    assert err.value.code == code


def test_bad_calls_raise_coded_errors():
    s = Scheduler("fifo", [1])
    s.submit(1, model=0, batch=1, arrival_ns=0)
    with pytest.raises(LanesError, match="already"):
        s.submit(1, model=0, batch=1, arrival_ns=0)
    with pytest.raises(LanesError) as err:
        s.submit(2, model=0, batch=1, arrival_ns=0, devices=[3])
    assert err.value.code == "bad_argument"
    with pytest.raises(LanesError) as err:
        s.complete(9, 0)
    assert err.value.code == "not_running"
