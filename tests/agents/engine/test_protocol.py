"""The protocol's lines as typed objects: every command parsed, every malformed one refused in one line naming
it, and the replies formatted and read back."""

from __future__ import annotations

import pytest

from agents.engine.protocol import (
    Bare,
    Go,
    GoLimits,
    Info,
    Option,
    Position,
    ProtocolError,
    SetOption,
    cp_from_wp,
    format_command,
    format_info,
    format_option,
    parse_bestmove,
    parse_command,
    parse_info,
    parse_option,
    wp_from_cp,
)

JFEN = "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1"


@pytest.mark.parametrize(
    "line, command",
    [
        ("jep", Bare("jep")),
        ("isready\r\n", Bare("isready")),
        ("  quit \t", Bare("quit")),
        ("setoption name MoveOverhead value 100", SetOption("MoveOverhead", "100")),
        ("setoption name Rules value configs/my rules.yaml", SetOption("Rules", "configs/my rules.yaml")),
        ("setoption name Clear Hash", SetOption("Clear Hash", "")),
        ("position startpos", Position(None)),
        ("position startpos moves a3a4 g7g6", Position(None, ("a3a4", "g7g6"))),
        (f"position jfen {JFEN} moves a3a4", Position(JFEN, ("a3a4",))),
        ("go", Go(GoLimits())),
        ("go infinite", Go(GoLimits(infinite=True))),
        ("go movetime 500", Go(GoLimits(movetime=500))),
        ("go depth 3 nodes 1000", Go(GoLimits(depth=3, nodes=1000))),
        (
            "go wtime 3000 btime 0 winc 100 binc 100 movestogo 5",
            Go(GoLimits(wtime=3000, btime=0, winc=100, binc=100, movestogo=5)),
        ),
    ],
)
def test_a_command_is_parsed_and_formatted_back(line: str, command: object) -> None:
    assert parse_command(line) == command
    assert parse_command(format_command(command)) == command  # type: ignore[arg-type]


@pytest.mark.parametrize("line", ["", "   ", "\r\n"])
def test_an_empty_line_is_no_command(line: str) -> None:
    assert parse_command(line) is None


@pytest.mark.parametrize(
    "line, message",
    [
        ("hello world", "unknown command 'hello world'"),
        ("GO depth 2", "unknown command 'GO depth 2'"),
        ("jep now", "jep: takes nothing, got 'now'"),
        ("setoption Rules default", "setoption: expected 'setoption name <Name> value <value>'"),
        ("setoption name value 3", "setoption: expected"),
        ("position", "position: expected 'position startpos' or 'position jfen <JFEN>'"),
        ("position startpos a3a4", "position: unexpected 'a3a4' after startpos"),
        ("position jfen 7/7 r 0", "position: a JFEN has four fields, got 3"),
        ("go depth", "go: depth needs a number"),
        ("go depth -1", "go: depth '-1' is not a whole number in 1.."),
        ("go depth 0", "go: depth '0' is not a whole number in 1.."),
        ("go movetime 1.5", "go: movetime '1.5' is not a whole number in 0.."),
        ("go wtime abc", "go: wtime 'abc' is not a whole number"),
        ("go nodes 99999999999999999999", "go: nodes '99999999999999999999' is not a whole number"),
        ("go ponder", "go: unknown limit 'ponder'"),
        ("go depth 2 depth 3", "go: depth is given twice"),
    ],
)
def test_a_malformed_command_is_refused_naming_it(line: str, message: str) -> None:
    with pytest.raises(ProtocolError) as e:
        parse_command(line)
    assert str(e.value).startswith(message), str(e.value)


def test_go_without_limits_or_with_infinite_is_unlimited() -> None:
    assert GoLimits().unlimited and GoLimits(infinite=True).unlimited
    assert GoLimits(infinite=True, depth=3).unlimited
    assert not GoLimits(depth=3).unlimited and not GoLimits(btime=0).unlimited


def test_an_info_line_is_formatted_in_the_pages_order_and_read_back() -> None:
    info = Info(depth=2, wp=0.64, nodes=620, nps=31000, time=20, pv=("g7g6", "a4a5"))
    line = format_info(info)
    assert line == "info depth 2 score wp 0.640 cp 100 nodes 620 nps 31000 time 20 pv g7g6 a4a5"
    assert parse_info(line) == Info(depth=2, wp=0.64, cp=100, nodes=620, nps=31000, time=20, pv=("g7g6", "a4a5"))
    assert format_info(Info(depth=5, win=3, nodes=9)) == "info depth 5 score win 3 nodes 9"
    assert parse_info("info sims 64 score loss 4 time 7") == Info(sims=64, loss=4, time=7)
    assert format_info(Info(string="error go: x")) == "info string error go: x"
    assert parse_info("info string error go: depth  'x'") == Info(string="error go: depth  'x'")


@pytest.mark.parametrize(
    "line, message",
    [
        ("bestmove a3a4", "info: not an info line"),
        ("info depth x", "info: depth 'x' is not a whole number"),
        ("info score wp 1.5 cp 0", "info: score wp '1.5' is not a number in [0, 1]"),
        ("info score mate 3", "info: score 'mate' is not wp, win or loss"),
        ("info seldepth 3", "info: unknown field 'seldepth'"),
    ],
)
def test_a_malformed_info_line_is_refused(line: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_info(line)


def test_cp_follows_the_pages_formula_and_its_clip() -> None:
    assert cp_from_wp(0.5) == 0 and cp_from_wp(0.64) == 100 and cp_from_wp(0.36) == -100
    assert cp_from_wp(0.0) == -3000 and cp_from_wp(1.0) == 3000 and cp_from_wp(1 - 1e-12) == 3000
    assert abs(wp_from_cp(cp_from_wp(0.8)) - 0.8) < 1e-3


def test_bestmove_and_option_lines_are_read_back() -> None:
    assert parse_bestmove("bestmove g7g6") == "g7g6"
    assert parse_bestmove("bestmove (none)\n") is None
    with pytest.raises(ProtocolError, match="bestmove: expected 'bestmove <move>', got 'bestmove'"):
        parse_bestmove("bestmove")
    for option in (
        Option("Rules", "string", "default"),
        Option("MoveOverhead", "spin", "50", 0, 5000),
        Option("Style", "combo", "solid", var=("solid", "wild")),
    ):
        assert parse_option(format_option(option)) == option
    assert format_option(Option("MoveOverhead", "spin", "50", 0, 5000)) == (
        "option name MoveOverhead type spin default 50 min 0 max 5000"
    )
    with pytest.raises(ProtocolError, match="option: not an option line"):
        parse_option("option name Rules default default")
