import pickle

import pytest

from lanes.errors import LanesError


def test_code_message_and_str() -> None:
    err = LanesError("scenario_invalid", "scenario x.toml: slo_ms = -1: must be a number > 0")
    assert err.code == "scenario_invalid"
    assert err.message == "scenario x.toml: slo_ms = -1: must be a number > 0"
    assert str(err) == err.message
    assert isinstance(err, Exception)


def test_constructor_takes_code_then_message_positionally() -> None:
    # The native module raises LanesError(code, message): keep this signature.
    with pytest.raises(LanesError) as info:
        raise LanesError("unknown_policy", "unknown policy 'x'")
    assert (info.value.code, info.value.message) == ("unknown_policy", "unknown policy 'x'")


def test_survives_pickling() -> None:
    err = pickle.loads(pickle.dumps(LanesError("bad_argument", "--seeds 0: too few")))
    assert (err.code, err.message) == ("bad_argument", "--seeds 0: too few")
