//! Wake-ups in spells (`host.wake_spell_ms`, `host.wake_spell_share`):
//! each wait keeps its table's distribution, but the waits near one another
//! in time come long together. Without the key every figure is as before; at
//! a light load (where waits do not queue) the mean latency stays where it
//! was while a request's two waits, a few ms apart, now go together and
//! lengthen its tail; and a spell without a table, or without its share, is
//! refused with the key named.

mod common;

use lanes_sim::config::{Scenario, SimError};
use lanes_sim::simulate;

use common::{cpu_like, figures, mode};

/// `cpu_like` with measured wake-ups before pre and post: 0.05 ms on the
/// whole, one in ten 4 ms.
fn measured() -> Scenario {
    let table = vec![(0.0, 0.02), (0.9, 0.08), (0.9001, 4.0), (1.0, 4.0)];
    let mut sc = cpu_like();
    sc.host.handoff_ms = 0.0;
    sc.host.pre_wake_ms = table.clone();
    sc.host.post_wake_ms = table;
    sc
}

#[test]
fn without_the_key_nothing_changes() {
    let sc = measured();
    for policy in ["fifo", "independent"] {
        let before = simulate(&sc, &mode(policy), 0.5, 7, 20_000).unwrap();
        let mut same = sc.clone();
        same.host.wake_spell_ms = 0.0;
        same.host.wake_spell_share = 0.0;
        let after = simulate(&same, &mode(policy), 0.5, 7, 20_000).unwrap();
        assert_eq!(figures(&after), figures(&before), "{policy}");
    }
}

#[test]
fn spells_keep_the_mean_and_put_a_request_s_two_waits_together() {
    // At load 0.05 a request's pre and post are a few ms apart and the
    // requests far apart: in spells of 50 ms its two waits mostly share
    // their level, so a slow one comes with a slow one and the p99 grows,
    // while each wait keeps its distribution (the unit tests check the
    // levels), so the mean moves only by what the waits' timing does to the
    // rest of the host (2-3 % here, over 4 seeds).
    let sc = measured();
    let mut spells = sc.clone();
    spells.host.wake_spell_ms = 50.0;
    spells.host.wake_spell_share = 0.95;
    for policy in ["fifo", "independent"] {
        let over_seeds = |sc: &Scenario| {
            let runs: Vec<_> = (1..=4)
                .map(|seed| simulate(sc, &mode(policy), 0.05, seed, 40_000).unwrap())
                .collect();
            let mean = runs.iter().map(|r| r.latency_ms.mean).sum::<f64>() / 4.0;
            let p99 = runs.iter().map(|r| r.latency_ms.p99).sum::<f64>() / 4.0;
            (mean, p99)
        };
        let (before, after) = (over_seeds(&sc), over_seeds(&spells));
        let mean = after.0 / before.0 - 1.0;
        assert!(
            mean.abs() < 0.05,
            "{policy}: mean {} -> {}",
            before.0,
            after.0
        );
        assert!(
            after.1 > before.1 + 1.0,
            "{policy}: p99 {} -> {}",
            before.1,
            after.1
        );
    }
}

#[test]
fn a_spell_needs_a_table_and_a_share() {
    // (with the wake tables, spell ms, share, the key refused or None)
    let cases = [
        (false, 5.0, 0.8, Some("host.wake_spell_ms")),
        (true, 5.0, 0.0, Some("host.wake_spell_share")),
        (true, 5.0, 1.5, Some("host.wake_spell_share")),
        (true, 0.0, 0.5, Some("host.wake_spell_share")),
        (true, -1.0, 0.5, Some("host.wake_spell_ms")),
        (true, 5.0, 0.8, None),
        (true, 5.0, 1.0, None),
    ];
    for (tables, ms, share, refused) in cases {
        let mut sc = if tables { measured() } else { cpu_like() };
        sc.host.wake_spell_ms = ms;
        sc.host.wake_spell_share = share;
        match (sc.validate(), refused) {
            (Ok(()), None) => {}
            (Err(SimError::InvalidScenario { key, .. }), Some(want)) => assert_eq!(key, want),
            (got, want) => panic!("{ms} ms, share {share}: {got:?}, wanted {want:?}"),
        }
    }
}
