"""The ``lanes`` entry point: subcommands, --version, and how errors end a command."""

import pytest

from lanes.cli import COMMANDS, NESTED, main, version


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"lanes {version()}"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    routed = {module.replace("-", "_") for module in NESTED.values()}
    for name in COMMANDS:
        if name in routed:
            assert name.replace("_", "-") not in out  # reached as two words, listed under the first
        else:
            assert f"    {name} " in out


def test_two_word_commands_are_routed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "corpus", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: lanes bench corpus")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve-all"]) == 2
    assert "invalid choice: 'serve-all'" in capsys.readouterr().err


def test_a_lanes_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    # The scenario is read before anything else, so this needs no native module.
    assert main(["sim", "no-such-scenario"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "lanes sim: error: scenario no-such-scenario: no such file, "
        "and not a built-in scenario (ocr)\n"
    )
