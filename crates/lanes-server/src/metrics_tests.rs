//! The metrics' pure parts as tables (batch sizes, `/proc` parsing) and one
//! registry rendered and parsed back: docs/metrics.md's families with
//! exactly their label sets, every outcome at 0 from the start, buckets.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::occupancy::Occupancy;

#[test]
fn batch_sizes_are_one_the_powers_of_two_and_the_max() {
    // test_lifecycle.py's table (0 is served as 1).
    let table: [(u32, &[u32]); 7] = [
        (0, &[1]),
        (1, &[1]),
        (2, &[1, 2]),
        (5, &[1, 2, 4, 5]),
        (8, &[1, 2, 4, 8]),
        (16, &[1, 2, 4, 8, 16]),
        (u32::MAX, &[]),
    ];
    for (top, sizes) in table {
        let got = powers_of_two(top);
        if top == u32::MAX {
            assert_eq!(got.len(), 33, "2^0 .. 2^31 and the max");
            assert_eq!(*got.last().unwrap(), u32::MAX);
        } else {
            assert_eq!(got, sizes, "{top}");
        }
    }
}

#[test]
fn host_cpu_reads_every_core_and_mode_of_proc_stat() {
    let stat = "cpu  10 20 30 40 50 60 70 80 90 100\n\
                cpu0 100 0 50 1000 0 0 3 0 0 0\n\
                cpu1 1 2 3 4\n\
                intr 12345 1 2\n\
                ctxt 999\n";
    let cpus = host_cpu(stat);
    assert_eq!(
        cpus,
        [
            ("0".to_owned(), [1.0, 0.0, 0.5, 10.0, 0.0, 0.0, 0.03, 0.0]),
            ("1".to_owned(), [0.01, 0.02, 0.03, 0.04, 0.0, 0.0, 0.0, 0.0]),
        ]
    );
    assert!(host_cpu("intr 1\n").is_empty());
}

#[test]
fn process_figures_come_from_proc_self() {
    // A command name with blanks and a ')' of its own.
    let stat = "4242 (lanes (serve) x) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 125 0 0 20 0 9 0";
    let status = "Name:\tlanes\nVmSize:\t  204800 kB\nVmRSS:\t   51200 kB\nThreads:\t9\n";
    let p = parse_process(stat, status, 17).unwrap();
    assert_eq!(
        p,
        ProcessStats {
            cpu_seconds: 3.75,
            resident_bytes: 51_200 * 1024,
            virtual_bytes: 204_800 * 1024,
            open_fds: 17,
        }
    );
    assert_eq!(parse_process("1 (x) S", status, 0), None);
    let live = process_stats().expect("this test runs on Linux");
    assert!(live.resident_bytes > 0 && live.open_fds > 0);
}

/// Family name → (sample name, labels, value) of an OpenMetrics text.
pub(crate) type Page = BTreeMap<String, Vec<(String, BTreeMap<String, String>, f64)>>;

/// Parses an OpenMetrics page line by line (what a scraper does): families
/// from `# TYPE`, samples as `name{k="v",...} value`.
pub(crate) fn parse(text: &str) -> Page {
    let mut page = Page::new();
    let mut current = String::new();
    assert!(text.ends_with("# EOF\n"), "{text}");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            current = rest.split(' ').next().unwrap().to_owned();
            page.entry(current.clone()).or_default();
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').unwrap();
                let labels = body
                    .split("\",")
                    .filter(|kv| !kv.is_empty())
                    .map(|kv| {
                        let (k, v) = kv.split_once("=\"").unwrap();
                        (k.to_owned(), v.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (name, labels)
            }
            None => (series, BTreeMap::new()),
        };
        assert!(name.starts_with(&current), "{name} outside {current}");
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap(),
        };
        page.get_mut(&current)
            .unwrap()
            .push((name.to_owned(), labels, value));
    }
    page
}

/// The one sample `sample` with `labels` (besides others).
pub(crate) fn value(page: &Page, family: &str, sample: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = page[family]
        .iter()
        .filter(|(name, l, _)| {
            name == sample
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
        })
        .map(|s| s.2)
        .collect();
    assert_eq!(found.len(), 1, "{sample} {labels:?}: {found:?}");
    found[0]
}

/// `lanes_requests_total` of `model` and `outcome`.
pub(crate) fn requests(page: &Page, model: &str, outcome: &str) -> f64 {
    let labels = [("model", model), ("outcome", outcome)];
    value(page, "lanes_requests", "lanes_requests_total", &labels)
}

/// docs/metrics.md: family → label names of its samples.
pub(crate) const LABELS: [(&str, &[&str]); 15] = [
    ("lanes_requests", &["model", "outcome"]),
    ("lanes_request_duration_seconds", &["model"]),
    ("lanes_queue_duration_seconds", &["model"]),
    ("lanes_preprocess_duration_seconds", &["model"]),
    ("lanes_device_duration_seconds", &["model"]),
    ("lanes_postprocess_duration_seconds", &["model"]),
    ("lanes_batch_size", &["model"]),
    ("lanes_queue_depth", &["model"]),
    ("lanes_cost_estimate_seconds", &["batch_size", "model"]),
    ("lanes_device_busy_seconds", &["device"]),
    ("lanes_device_jobs", &["device"]),
    ("lanes_device_idle_while_waiting_seconds", &["device"]),
    ("lanes_device_overlap_seconds", &["device"]),
    ("lanes_host_cpu_seconds", &["cpu", "mode"]),
    ("lanes_info", &["policy", "version"]),
];

/// Asserts every documented family is on `page` with exactly its label set.
pub(crate) fn check_families(page: &Page) {
    for (family, labels) in LABELS {
        let samples = page.get(family).unwrap_or_else(|| panic!("no {family}"));
        for (name, l, _) in samples {
            let keys: Vec<_> = l
                .keys()
                .filter(|k| *k != "le")
                .map(String::as_str)
                .collect();
            assert_eq!(keys, labels, "{family}: {name} {l:?}");
        }
    }
    let outcomes: BTreeSet<_> = page["lanes_requests"]
        .iter()
        .map(|(_, l, _)| l["outcome"].as_str())
        .collect();
    let all: BTreeSet<_> = crate::stats::Outcome::ALL
        .iter()
        .map(|o| o.as_str())
        .collect();
    assert_eq!(outcomes, all);
    let modes: BTreeSet<_> = page["lanes_host_cpu_seconds"]
        .iter()
        .map(|(_, l, _)| l["mode"].as_str())
        .collect();
    assert_eq!(modes, CPU_MODES.into_iter().collect());
}

#[tokio::test]
async fn a_fresh_registry_shows_every_family_at_zero() {
    let mut occupancy = Occupancy::new(vec!["sim:0".into()]);
    let snapshot = Arc::new(Snapshot {
        models: vec![ModelGauges::new("a\"b", 1), ModelGauges::new("pair", 4)],
        devices: Arc::clone(occupancy.accounts()),
        clock: Clock::start(),
    });
    snapshot.models[1].depth.store(3, Ordering::Relaxed);
    snapshot.models[1].estimates[2].store(2_500_000, Ordering::Relaxed);
    let info = Info {
        version: "0.1.0".into(),
        policy: "sjf".into(),
    };
    let (metrics, series) = Metrics::new(&info, Arc::clone(&snapshot));
    series[1].outcomes[Outcome::Success as usize].inc();
    series[1].batch_size.observe(3.0);
    series[1].device.observe(0.003);
    occupancy.begin(0, 0);
    occupancy.end(0, 0);
    let text = metrics.render();
    let page = parse(&text);
    check_families(&page);
    let requests = |model, outcome| requests(&page, model, outcome);
    assert_eq!(requests("pair", "success"), 1.0);
    assert_eq!(requests("pair", "cancelled"), 0.0);
    assert_eq!(requests("a\\\"b", "success"), 0.0, "a quote is escaped");
    let info_value = value(
        &page,
        "lanes_info",
        "lanes_info",
        &[("version", "0.1.0"), ("policy", "sjf")],
    );
    assert_eq!(info_value, 1.0);
    // Batch-size buckets: 1, 2, 4 (the largest max_batch_size), +Inf.
    let les: Vec<_> = page["lanes_batch_size"]
        .iter()
        .filter(|(n, l, _)| n == "lanes_batch_size_bucket" && l["model"] == "pair")
        .map(|(_, l, v)| (l["le"].clone(), *v))
        .collect();
    let expected = [("1.0", 0.0), ("2.0", 0.0), ("4.0", 1.0), ("+Inf", 1.0)];
    assert_eq!(les, expected.map(|(l, v)| (l.to_owned(), v)));
    // Duration buckets: 17 bounds and +Inf, cumulative.
    let device: Vec<_> = page["lanes_device_duration_seconds"]
        .iter()
        .filter(|(n, l, _)| n.ends_with("_bucket") && l["model"] == "pair")
        .map(|(_, _, v)| *v)
        .collect();
    assert_eq!(device.len(), DURATION_BUCKETS.len() + 1);
    let first = DURATION_BUCKETS.iter().position(|&b| b >= 0.003).unwrap();
    assert!(device[..first].iter().all(|&v| v == 0.0));
    assert!(device[first..].iter().all(|&v| v == 1.0));
    // Scrape-time values.
    let gauge = |family, labels: &[(&str, &str)]| value(&page, family, family, labels);
    assert_eq!(gauge("lanes_queue_depth", &[("model", "pair")]), 3.0);
    assert_eq!(
        gauge(
            "lanes_cost_estimate_seconds",
            &[("model", "pair"), ("batch_size", "4")]
        ),
        0.0025
    );
    let sizes: BTreeSet<_> = page["lanes_cost_estimate_seconds"]
        .iter()
        .filter(|(_, l, _)| l["model"] == "pair")
        .map(|(_, l, _)| l["batch_size"].clone())
        .collect();
    assert_eq!(
        sizes,
        ["1", "2", "4"].map(String::from).into_iter().collect()
    );
    let jobs = value(
        &page,
        "lanes_device_jobs",
        "lanes_device_jobs_total",
        &[("device", "sim:0")],
    );
    assert_eq!(jobs, 1.0);
    // The process' own figures (values vary; present once each).
    for (family, sample) in [
        ("process_cpu_seconds", "process_cpu_seconds_total"),
        (
            "process_resident_memory_bytes",
            "process_resident_memory_bytes",
        ),
        ("process_open_fds", "process_open_fds"),
    ] {
        assert!(value(&page, family, sample, &[]) >= 0.0);
    }
    for line in [
        "# HELP lanes_requests Requests by outcome.",
        "# TYPE lanes_device_busy_seconds counter",
        "lanes_device_busy_seconds_total{device=\"sim:0\"} 0.0",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
    }
}
