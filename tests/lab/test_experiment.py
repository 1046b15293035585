"""The experiment file: each bad key or value is one line naming it; good files parse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lanes.errors import LanesError
from lanes.lab.experiment import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
name = "t"
[[variant]]
name = "a"
command = ["lanes", "serve", "--port", "{port}"]
[[variant]]
name = "b"
url = "http://127.0.0.1:9000"
[workload]
mix = [{model = "char_cnn", weight = 3}, {model = "line_rnn_en", weight = 1}]
levels = [10, 20, 30, 40, 50]
slo_ms = 50
"""


def test_a_good_file_parses_with_defaults_and_normalised_weights():
    exp = parse_experiment(GOOD)
    assert exp.name == "t"
    assert [v.name for v in exp.variants] == ["a", "b"]
    assert exp.variants[0].command == ("lanes", "serve", "--port", "{port}")
    assert exp.variants[1].url == "http://127.0.0.1:9000"
    assert exp.variants[1].metrics_url is None
    w = exp.workload
    assert [m.weight for m in w.mix] == [0.75, 0.25]
    assert (w.arrival, w.repeats, w.warmup_s, w.measure_s, w.generators) == (
        "poisson",
        5,
        2.0,
        8.0,
        1,
    )
    assert not w.closed
    quick = exp.quick()
    assert quick.workload.levels == (10.0, 30.0, 50.0)
    assert quick.workload.repeats == 1
    assert exp.with_repeats(2).workload.repeats == 2
    assert w.search_steps == 0  # no capacity search unless asked for
    searched = parse_experiment(GOOD + "capacity_search = { steps = 3 }\n")
    assert searched.workload.search_steps == 3
    assert searched.quick().workload.search_steps == 3  # --quick keeps the search


def test_variants_picks_some_in_the_files_order():
    exp = parse_experiment(GOOD)
    assert [v.name for v in exp.with_variants(["b", "a"]).variants] == ["a", "b"]
    assert [v.name for v in exp.with_variants(["b", ""]).variants] == ["b"]
    with pytest.raises(LanesError, match=r"--variants a,c: no variant 'c' \(have: a, b\)"):
        exp.with_variants(["a", "c"])
    with pytest.raises(LanesError, match=r"--variants : names no variant \(have: a, b\)"):
        exp.with_variants([""])


def test_an_unknown_variant_on_the_command_line_is_one_line_and_nothing_runs(tmp_path):
    (tmp_path / "t.toml").write_text(GOOD)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lanes", "bench", "run", str(tmp_path / "t.toml"),
         "--variants", "a,sjf", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "lanes bench run: error: --variants a,sjf: no variant 'sjf' (have: a, b)"
    ]
    assert not out.exists()


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


BAD = [
    # (edit of the good file, the expected message after "experiment: ")
    (('name = "t"', 'nam = "t"'), "nam: unknown key; allowed: name, description, baseline"),
    (('name = "t"', ""), "name: missing; the experiment's name is required"),
    (('name = "t"', 'name = "a b"'), "name = 'a b': allowed: letters, digits"),
    (('name = "t"', 'name = "t"\nbaseline = "c"'), "baseline = 'c': not a variant; allowed: a, b"),
    (('name = "b"', 'name = "a"'), "variant[1].name = 'a': a second variant of this name"),
    (('url = "http://127.0.0.1:9000"', ""), "variant[1]: give exactly one of command"),
    (
        ('url = "http://127.0.0.1:9000"', 'url = "ftp://x"'),
        "variant[1].url = 'ftp://x': allowed: an http:// URL",
    ),
    (
        ('command = ["lanes", "serve", "--port", "{port}"]', "command = []"),
        "variant[0].command = []: allowed: a non-empty list",
    ),
    (
        ('name = "a"', 'name = "a"\nready_timeout_s = 0'),
        "variant[0].ready_timeout_s = 0: allowed: a number > 0",
    ),
    (
        ('name = "a"', 'name = "a"\nport = 1'),
        "variant[0].port: unknown key; allowed: name, command, url",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\narival = 'poisson'"),
        "workload.arival: unknown key; allowed: mix, arrival",
    ),
    (("slo_ms = 50", ""), "workload.slo_ms: missing"),
    (("slo_ms = 50", "slo_ms = -1"), "workload.slo_ms = -1: allowed: a number > 0"),
    (
        ("slo_ms = 50", "slo_ms = 50\narrival = 'gamma'"),
        "workload.arrival = 'gamma': allowed: constant, poisson, bursty, trace",
    ),
    (("slo_ms = 50", "slo_ms = 50\ncv = 2.0"), "workload.cv = 2.0: only with arrival = 'bursty'"),
    (
        ("slo_ms = 50", "slo_ms = 50\narrival = 'trace'"),
        "workload.trace: missing; arrival = 'trace' needs",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\narrival = 'trace'\ntrace = 'nope.csv'"),
        "workload.trace = 'nope.csv': no such file",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\nrepeats = 0"),
        "workload.repeats = 0: allowed: a whole number >= 1",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\ngenerators = 1.5"),
        "workload.generators = 1.5: allowed: a whole number >= 1",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\nmeasure_s = 0"),
        "workload.measure_s = 0: allowed: a number > 0",
    ),
    (("slo_ms = 50", "slo_ms = 50\nconcurrency = [1]"), "workload: give exactly one of levels"),
    (
        ("slo_ms = 50", "slo_ms = 50\ncapacity_search = 3"),
        "workload.capacity_search = 3: not a table",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\ncapacity_search = { step = 3 }"),
        "workload.capacity_search.step: unknown key; allowed: steps",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\ncapacity_search = { steps = 9 }"),
        "workload.capacity_search.steps = 9: allowed: 0 to 8 steps",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\ncapacity_search = { steps = -1 }"),
        "workload.capacity_search.steps = -1: allowed: a whole number >= 0",
    ),
    (
        ("levels = [10, 20, 30, 40, 50]", "levels = [10, 5]"),
        "workload.levels = [10, 5]: allowed: a strictly ascending list",
    ),
    (
        ("levels = [10, 20, 30, 40, 50]", "levels = [10, 0]"),
        "workload.levels[1] = 0: allowed: a number > 0",
    ),
    (
        ("levels = [10, 20, 30, 40, 50]", "concurrency = [1, 2.5]"),
        "workload.concurrency[1] = 2.5: allowed: a whole number >= 1",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", weight = 0}'),
        "workload.mix[0].weight = 0: allowed: a number > 0",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "ocr", weight = 1}'),
        "workload.mix[0].model = 'ocr': not a demo zoo model, so a corpus is needed",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", w = 1}'),
        "workload.mix[0].w: unknown key; allowed: model, weight, corpus, input, arrival",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "line_rnn_en"}'),
        "workload.mix[1].model = 'line_rnn_en': a second mix entry",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", corpus = "x.jsonl"}'),
        "workload.mix[0].corpus = 'x.jsonl': no such file",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\ntrace_fit = 'time'"),
        "workload.trace_fit = 'time': only with arrival = 'trace'",
    ),
    (
        (
            '{model = "char_cnn", weight = 3}',
            '{model = "char_cnn", arrival = "poisson", trace_fit = "time"}',
        ),
        "workload.mix[0].trace_fit = 'time': only with this entry's arrival = 'trace'",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", arrival = "gamma"}'),
        "workload.mix[0].arrival = 'gamma': allowed: constant, poisson, bursty, trace",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", cv = 2}'),
        "workload.mix[0].cv = 2: only with this entry's arrival = 'bursty'",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", arrival = "trace"}'),
        "workload.mix[0].trace: missing; arrival = 'trace' needs",
    ),
    (
        ('{model = "char_cnn", weight = 3}', '{model = "char_cnn", trace = "t.csv"}'),
        "workload.mix[0].trace = 't.csv': only with this entry's arrival = 'trace'",
    ),
    (
        (
            '{model = "char_cnn", weight = 3}',
            '{model = "char_cnn", arrival = "trace", trace = "nope.csv"}',
        ),
        "workload.mix[0].trace = 'nope.csv': no such file",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\n[stability]\nwindows = 1"),
        "stability.windows = 1: allowed: a whole number >= 2",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\n[stability]\nmax_ext = 1"),
        "stability.max_ext: unknown key; allowed: tolerance",
    ),
    (
        ("slo_ms = 50", "slo_ms = 50\n[stability]\ntolerance = 0"),
        "stability.tolerance = 0: allowed: a number > 0",
    ),
    (("[workload]", "[workload]\n[workload]"), "not valid TOML"),
    *(
        (("slo_ms = 50", f"slo_ms = 50\n{line}"), message)
        for line, message in [
            ("deadline_ms = 0", "workload.deadline_ms = 0: allowed: a number > 0"),
            ("deadline_ms = -5", "workload.deadline_ms = -5: allowed: a number > 0"),
            ("deadline_ms = 'soon'", "workload.deadline_ms = 'soon': allowed: a number > 0"),
            ("deadline_ms = true", "workload.deadline_ms = True: allowed: a number > 0"),
            (
                "deadline_ms = 10001",
                "workload.deadline_ms = 10001: allowed: a number > 0 and <= 10000 "
                "(workload.timeout_s x 1000)",
            ),
            (
                "timeout_s = 0.5\ndeadline_ms = 500.5",
                "workload.deadline_ms = 500.5: allowed: a number > 0 and <= 500 ",
            ),
        ]
    ),
    *(
        (
            ('{model = "line_rnn_en", weight = 1}', f'{{model = "line_rnn_en", {field}}}'),
            message,
        )
        for field, message in [
            ("deadline_ms = 0", "workload.mix[1].deadline_ms = 0: allowed: a number > 0"),
            ("deadline_ms = -1.5", "workload.mix[1].deadline_ms = -1.5: allowed: a number > 0"),
            ('deadline_ms = "1"', "workload.mix[1].deadline_ms = '1': allowed: a number > 0"),
            (
                "deadline_ms = 20000",
                "workload.mix[1].deadline_ms = 20000: allowed: a number > 0 and <= 10000 ",
            ),
        ]
    ),
]


@pytest.mark.parametrize(("edit", "message"), BAD, ids=[m for _, m in BAD])
def test_each_bad_key_or_value_is_one_line_naming_it(edit, message, tmp_path):
    with pytest.raises(LanesError) as info:
        parse_experiment(_replace(*edit), base=tmp_path)
    assert info.value.code == "experiment_invalid"
    assert info.value.message.startswith(f"experiment: {message}"), info.value.message
    assert "\n" not in info.value.message


def test_paths_are_relative_to_the_file(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"path": "/v2/models/m/infer"}\n')
    (tmp_path / "exp.toml").write_text(
        _replace('{model = "char_cnn", weight = 3}', '{model = "m", corpus = "c.jsonl"}')
    )
    exp = load_experiment(tmp_path / "exp.toml")
    assert exp.workload.mix[0].corpus == tmp_path / "c.jsonl"


@pytest.mark.parametrize(
    "path",
    [
        *sorted((ROOT / "examples" / "experiments").glob("*.toml")),
        ROOT / "python/lanes/lab/demo.toml",
    ],
    ids=lambda p: p.name,
)
def test_the_shipped_experiments_are_valid(path):
    exp = load_experiment(path)
    assert exp.variants and exp.workload.level_count >= 1


def test_the_command_line_says_one_line_and_exits_2(tmp_path):
    (tmp_path / "bad.toml").write_text(_replace("slo_ms = 50", "slo_ms = 50\nrepeat = 3"))
    proc = subprocess.run(
        [sys.executable, "-m", "lanes", "bench", "run", str(tmp_path / "bad.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"lanes bench run: error: {tmp_path / 'bad.toml'}: workload.repeat: unknown key; "
        "allowed: mix, arrival, cv, trace, trace_fit, segment_s, levels, concurrency, warmup_s, "
        "measure_s, "
        "repeats, slo_ms, generators, connections, timeout_s, deadline_ms, seed, capacity_search"
    ]


def test_a_mix_entry_may_have_its_own_arrival_but_not_in_closed_loop(tmp_path):
    (tmp_path / "t.csv").write_text("0.0\n0.5\n0.6\n2.0\n")
    own = '{model = "line_rnn_en", weight = 1, arrival = "trace", trace = "t.csv"}'
    exp = parse_experiment(_replace('{model = "line_rnn_en", weight = 1}', own), base=tmp_path)
    cnn, en = exp.workload.mix
    assert (cnn.arrival, cnn.trace) == (None, None)
    assert (en.arrival, en.trace, en.trace_fit) == ("trace", tmp_path / "t.csv", None)
    fitted = own.replace("}", ', trace_fit = "time"}')
    exp = parse_experiment(_replace('{model = "line_rnn_en", weight = 1}', fitted), base=tmp_path)
    assert exp.workload.mix[1].trace_fit == "time"
    with pytest.raises(LanesError) as info:
        parse_experiment(
            _replace('{model = "line_rnn_en", weight = 1}', own.replace("}", ", trace_fit = 1}")),
            base=tmp_path,
        )
    assert "workload.mix[1].trace_fit = 1: allowed: rate, time" in info.value.message
    bursty = '{model = "line_rnn_en", arrival = "bursty", cv = 4}'
    assert (
        parse_experiment(_replace('{model = "line_rnn_en", weight = 1}', bursty)).workload.mix[1].cv
        == 4.0
    )
    closed = _replace('{model = "line_rnn_en", weight = 1}', bursty).replace(
        "levels = [10, 20, 30, 40, 50]", "concurrency = [1, 2]"
    )
    with pytest.raises(LanesError) as info:
        parse_experiment(closed)
    assert "workload.mix[1].arrival = 'bursty': closed loop (concurrency) has no arrival" in (
        info.value.message
    )


def test_a_deadline_is_the_workloads_or_a_mix_entrys_own():
    exp = parse_experiment(GOOD)
    w = exp.workload
    assert w.deadline_ms is None  # none unless asked for: requests carry no deadline
    assert [w.deadline_for(e) for e in w.mix] == [None, None]
    text = _replace(
        '{model = "line_rnn_en", weight = 1}', '{model = "line_rnn_en", deadline_ms = 2.5}'
    ).replace("slo_ms = 50", "slo_ms = 50\ndeadline_ms = 150\ntimeout_s = 1")
    w = parse_experiment(text).workload
    assert w.deadline_ms == 150.0
    assert [(e.model, e.deadline_ms, w.deadline_for(e)) for e in w.mix] == [
        ("char_cnn", None, 150.0),
        ("line_rnn_en", 2.5, 2.5),
    ]
    assert parse_experiment(text).quick().workload.deadline_ms == 150.0  # --quick keeps it
    # the limit is the client's timeout, the workload's, whether its key comes first or not
    at_limit = text.replace("deadline_ms = 150", "deadline_ms = 1000")
    assert parse_experiment(at_limit).workload.deadline_ms == 1000.0
    over = text.replace("deadline_ms = 2.5", "deadline_ms = 1500")
    with pytest.raises(LanesError) as info:
        parse_experiment(over)
    assert info.value.message == (
        "experiment: workload.mix[1].deadline_ms = 1500: allowed: a number > 0 and <= 1000 "
        "(workload.timeout_s x 1000)"
    )
