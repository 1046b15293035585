//! The client's connections per service (`client_connections`): a limit
//! no run reaches simulates exactly as no limit; past the knee a limited
//! service's backlog waits at the client, so under `fifo` the other
//! services' tails do not lengthen, while its own latency still counts the
//! client's wait; a limit of 0 is refused by name.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::{simulate, PointResult};

use common::{cpu_like, mode};

fn run(cap: Option<u32>, m: &str, load: f64) -> PointResult {
    let mut sc = cpu_like();
    for s in &mut sc.services {
        s.client_connections = cap;
    }
    simulate(&sc, &mode(m), load, 3, 20_000).unwrap()
}

#[test]
fn a_limit_never_reached_changes_nothing() {
    for m in ["fifo", "sjf", "independent"] {
        let free = run(None, m, 0.8);
        let wide = run(Some(1_000_000), m, 0.8);
        assert_eq!(
            serde_json::to_string(&free).unwrap(),
            serde_json::to_string(&wide).unwrap(),
            "{m}"
        );
    }
}

#[test]
fn past_the_knee_the_backlog_waits_at_the_client() {
    let load = 1.3;
    let free = run(None, "fifo", load);
    let capped = run(Some(16), "fifo", load);
    let name = |r: &PointResult| {
        r.services
            .iter()
            .max_by(|a, b| a.1.latency_ms.p99.total_cmp(&b.1.latency_ms.p99))
            .map(|(k, _)| k.clone())
            .unwrap()
    };
    let slowest = name(&free);
    // Someone's backlog grows without the limit: the run is past the knee.
    assert!(free.latency_ms.p99 > 1_000.0, "p99 {}", free.latency_ms.p99);
    let others_p99 = |r: &PointResult| {
        r.services
            .iter()
            .filter(|(k, _)| **k != slowest)
            .map(|(_, s)| s.latency_ms.p99)
            .fold(0.0, f64::max)
    };
    assert!(
        others_p99(&capped) <= 1.02 * others_p99(&free),
        "others' p99 capped {} against {}",
        others_p99(&capped),
        others_p99(&free)
    );
    // The limited backlog's latency still counts its wait at the client.
    let own = |r: &PointResult| r.services[&slowest].latency_ms.p99;
    assert!(
        own(&capped) > 0.5 * own(&free),
        "{slowest}: p99 capped {} against {}",
        own(&capped),
        own(&free)
    );
}

#[test]
fn no_connections_is_refused_by_name() {
    let mut sc = cpu_like();
    sc.services[1].client_connections = Some(0);
    let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
    assert!(
        matches!(&err, SimError::InvalidScenario { key, .. } if key == "service[1].client_connections"),
        "{err}"
    );
}
