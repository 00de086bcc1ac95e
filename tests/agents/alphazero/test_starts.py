"""Start positions for self-play: mining the positions where a move and alpha-beta disagree, the start-position
file, and self-play games started from it (`SelfPlayConfig.starts`)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.alphazero.__main__ import main
from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.games import SelfPlayConfig, SelfPlayConfigError, game_seed, play_games
from agents.alphazero.selfplay.rules_mix import parse_rules_mix
from agents.alphazero.selfplay.starts import (
    StartsError,
    load_starts,
    mine_starts,
    parse_starts,
    split_start,
    start_rules,
    write_starts,
)
from agents.arena.records import GameRecord, write_jsonl
from envs import Board, RuleSet
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask
from envs.notation import START_JFEN
from envs.rules import load_rules

RULES = RuleSet(no_capture_draw=40)

HOLE = "1d2c1t/7/l1pw2e/1r5/E6/3P3/5R1/2WD1L1/CT5 b 41 21"
"""Blue to move: the Rat on b6 takes the Elephant on a6; a7a6 leaves it there (about 900 below at depth 4)."""


def _opening(moves: int) -> str:
    """The position after the first legal move `moves` times from the start (plies of a real game)."""
    board = Board(rules=RULES)
    for _ in range(moves):
        board.push(sorted(board.legal_moves, key=str)[0])
    return board.jfen()


def _record(
    start: str, moves: list[str], red: str = "net", blue: str = "net", rules: RuleSet | None = None
) -> GameRecord:
    return GameRecord(start=start, moves=moves, red=red, blue=blue, rules=(rules or RuleSet()).to_dict())


def test_a_move_that_leaves_a_capture_is_mined_and_the_capture_is_not() -> None:
    missed, taken = _record(HOLE, ["a7a6"]), _record(HOLE, ["b6a6"])
    found = list(mine_starts([missed, taken], depth=4, margin=300, plies=(0, 10)))
    assert [(d.jfen, d.played, d.best, d.game, d.ply) for d in found] == [(HOLE, "a7a6", "b6a6", 0, 0)]
    assert found[0].deficit > 300
    assert not list(mine_starts([missed], depth=4, margin=found[0].deficit, plies=(0, 10)))  # the margin is strict


def test_mining_keeps_the_players_plies_and_positions_asked_for() -> None:
    missed = _record(HOLE, ["a7a6"], red="alphabeta:depth=4", blue="checkpoint:path=a.pt")
    assert len(list(mine_starts([missed], players=["checkpoint:*"]))) == 1  # Blue moved there
    assert not list(mine_starts([missed], players=["alphabeta:*"]))
    assert not list(mine_starts([missed], plies=(1, 60)))
    assert len(list(mine_starts([missed, missed]))) == 1  # a position once, from the first game
    with pytest.raises(ValueError, match="depth=0"):
        list(mine_starts([missed], depth=0))
    with pytest.raises(ValueError, match="plies=5:5"):
        list(mine_starts([missed], plies=(5, 5)))


def test_the_file_written_loads_back_and_bad_files_are_named(tmp_path) -> None:
    path = tmp_path / "holes.txt"
    found = list(mine_starts([_record(HOLE, ["a7a6"])]))
    assert write_starts(path, found, header="two lines\nof header") == 1
    text = path.read_text()
    assert text.startswith("# two lines\n# of header\n") and "played a7a6, alpha-beta b6a6" in text
    assert load_starts(path) == (HOLE,)
    path.write_text(f"# comment\n\n{START_JFEN}\n  {HOLE}  \n")
    assert load_starts(path) == (START_JFEN, HOLE)
    path.write_text(f"{START_JFEN}\nl5t/1d3c1 r 0 1\n")
    with pytest.raises(StartsError, match=r"holes.txt:2: not a JFEN"):
        load_starts(path)
    path.write_text("# nothing\n\n")
    with pytest.raises(StartsError, match="no start positions"):
        load_starts(path)
    with pytest.raises(StartsError, match="cannot read"):
        load_starts(tmp_path / "missing.txt")


def test_the_command_writes_the_file_and_refuses_bad_input(tmp_path, capsys) -> None:
    games = tmp_path / "games.jsonl"
    write_jsonl(games, [_record(START_JFEN, []), _record(HOLE, ["a7a6", "a5a6"])])
    out = tmp_path / "holes.txt"
    assert main(["mine-starts", str(games), "--out", str(out), "--plies", "0:1", "--last", "1"]) == 0
    assert load_starts(out) == (HOLE,) and "wrote 1 positions" in capsys.readouterr().out
    assert main(["mine-starts", str(tmp_path / "none.jsonl"), "--out", str(out)]) == 2
    assert "no game record file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["mine-starts", str(games), "--out", str(out), "--plies", "9:3"])
    assert stop.value.code == 2 and "FIRST:END" in capsys.readouterr().err


def test_starts_and_their_fraction_go_together_and_their_counters_are_checked(tmp_path) -> None:
    path = tmp_path / "starts.txt"
    path.write_text(f"{HOLE}\n")
    with pytest.raises(SelfPlayConfigError, match="go together"):
        SelfPlayConfig(starts=str(path))
    with pytest.raises(SelfPlayConfigError, match="go together"):
        SelfPlayConfig(starts_fraction=0.5)
    with pytest.raises(StartsError, match="train.selfplay.starts: cannot read"):
        SelfPlayConfig(starts=str(tmp_path / "missing.txt"), starts_fraction=0.5)
    assert SelfPlayConfig(starts=str(path), starts_fraction=0.5).start_positions == (HOLE,)
    path.write_text("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 29900 1\n")
    with pytest.raises(SelfPlayConfigError, match=r"starts \(.*, position 1\).*would pass 30000"):
        SelfPlayConfig(starts=str(path), starts_fraction=0.5, max_plies=200)


def _play(tmp_path, parallel: int = 3, fraction: float = 0.5, random_plies: int = 0, num_games: int = 8):
    path = tmp_path / "starts.txt"
    pool = [_opening(n) for n in (3, 8, 13)]
    path.write_text("\n".join(pool) + "\n")
    settings = SelfPlayConfig(
        parallel=parallel, max_plies=30, starts=str(path), starts_fraction=fraction, random_plies=random_plies
    )
    data = play_games(
        uniform_evaluator,
        settings,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=6),
        rules=RULES,
        num_games=num_games,
        seed=5,
    )
    return pool, data


def test_a_fraction_of_the_games_start_from_the_file_and_train_from_there(tmp_path) -> None:
    pool, data = _play(tmp_path)
    from_pool = [r for r in data.records if "start_index" in r.extra]
    assert 0 < len(from_pool) < len(data.records)
    for r in data.records:
        assert r.start == (pool[r.extra["start_index"]] if "start_index" in r.extra else START_JFEN)
    row = 0
    obs = np.zeros(OBS_SHAPE, dtype=np.float32)
    mask = np.zeros(N_ACTIONS, dtype=np.bool_)
    for rec in data.records:  # each game's rows replay from its own first position
        board = Board.from_jfen(rec.start, rules=RULES)
        for m in rec.moves:
            encode_observation(board.state, board.hashes, board.flags, obs)
            legal_action_mask(board.state, board.hist, board.flags, mask)
            np.testing.assert_array_equal(data.obs[row], obs)
            np.testing.assert_array_equal(data.mask[row], mask)
            board.push(m)
            row += 1
        assert len(rec.moves) <= 30
    assert row == len(data)
    _, alone = _play(tmp_path, parallel=1)  # a game's start comes from its own seed, whatever its slot
    assert [(r.start, r.moves) for r in alone.records] == [(r.start, r.moves) for r in data.records]
    assert [r.seed for r in data.records] == [game_seed(5, k) for k in range(8)]


def test_games_from_the_file_play_no_random_opening_plies(tmp_path) -> None:
    _, plain = _play(tmp_path, fraction=1.0, num_games=4)
    _, opened = _play(tmp_path, fraction=1.0, num_games=4, random_plies=6)
    assert [r.moves for r in opened.records] == [r.moves for r in plain.records]
    _, mixed = _play(tmp_path, fraction=0.5, random_plies=6)
    _, unopened = _play(tmp_path, fraction=0.5)
    assert any(r.moves != u.moves for r, u in zip(mixed.records, unopened.records) if "start_index" not in r.extra)


def test_the_positions_travel_with_the_settings_without_the_file(tmp_path) -> None:
    """A worker on another machine gets the positions with the settings (pickled) and may change them (its share
    of the games at once) without the file, which only the trainer's machine has."""
    import pickle

    path = tmp_path / "starts.txt"
    path.write_text(f"{HOLE}\n{START_JFEN}\n")
    settings = SelfPlayConfig(starts=str(path), starts_fraction=0.25, parallel=8)
    path.unlink()
    sent = pickle.loads(pickle.dumps(settings))
    half = sent.changed(parallel=4)
    assert half.start_positions == (HOLE, START_JFEN) and (half.parallel, half.starts_fraction) == (4, 0.25)
    assert half.starts == str(path) and settings.parallel == 8
    with pytest.raises(ValueError, match="carries the start positions over"):
        sent.changed(starts_fraction=0.5)


ENEMY_RAT = load_rules("enemy_rat")


def test_a_line_may_name_its_rule_set_and_a_bad_tag_is_named() -> None:
    lines = [f"  {HOLE}   rules=enemy_rat ", START_JFEN]
    assert parse_starts(lines, "f") == (f"{HOLE} rules=enemy_rat", START_JFEN)
    assert [split_start(line) for line in parse_starts(lines, "f")] == [(HOLE, "enemy_rat"), (START_JFEN, None)]
    for bad in (f"{HOLE} rules=", f"{HOLE} rules=a/b", f"{HOLE} enemy_rat"):
        with pytest.raises(StartsError, match="f:1: not a JFEN position with an optional rules="):
            parse_starts([bad], "f")


def test_a_tag_names_a_rule_set_the_run_plays() -> None:
    tagged = (f"{HOLE} rules=enemy_rat", HOLE)
    mix = {e.name: e.rules for e in parse_rules_mix(["default", "enemy_rat"])}
    assert start_rules(tagged, RuleSet(), mix) == {"enemy_rat": ENEMY_RAT}
    assert start_rules(tagged, ENEMY_RAT) == {"enemy_rat": ENEMY_RAT}  # one rule set, named by the tag
    assert start_rules(tagged, None) == {"enemy_rat": ENEMY_RAT}  # any named set
    with pytest.raises(StartsError, match="where, position 1: rules=enemy_rat differs from the rules the run"):
        start_rules(tagged, RuleSet(), where="where")
    with pytest.raises(StartsError, match=r"position 1: rules=enemy_rat is no rule set of train.rules_mix \(default"):
        start_rules(tagged, RuleSet(), {"default": RuleSet(), "keeps_rank": load_rules("keeps_rank")})
    with pytest.raises(StartsError, match="rules=bogus: unknown rule set 'bogus'"):
        start_rules((f"{HOLE} rules=bogus",), RuleSet())


def test_positions_mined_from_other_rules_are_tagged_with_their_rule_set(tmp_path) -> None:
    plain, other = _record(HOLE, ["a7a6"]), _record(HOLE, ["a7a6"], rules=ENEMY_RAT)
    found = list(mine_starts([plain, other]))
    assert [(d.game, d.rules) for d in found] == [(0, "default"), (1, "enemy_rat")]  # once a rule set
    path = tmp_path / "holes.txt"
    assert write_starts(path, found) == 2
    assert load_starts(path) == (f"{HOLE} rules=default", f"{HOLE} rules=enemy_rat")
    write_starts(path, found[:1])  # all default: untagged, as before tags
    assert load_starts(path) == (HOLE,)
    unnamed = list(mine_starts([_record(HOLE, ["a7a6"], rules=RuleSet(no_capture_draw=77))]))
    assert unnamed[0].rules is None
    with pytest.raises(ValueError, match="game 0 plays rules that no rule set of configs/rules/ holds"):
        write_starts(path, found + unnamed)
    assert load_starts(path) == (HOLE,)  # nothing written


def _play_mix(tmp_path, lines: list[str], fraction: float, num_games: int = 8):
    path = tmp_path / "starts.txt"
    path.write_text("\n".join(lines) + "\n")
    settings = SelfPlayConfig(parallel=4, max_plies=20, starts=str(path), starts_fraction=fraction)
    return play_games(
        uniform_evaluator,
        settings,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=4),
        rules=RuleSet(),
        num_games=num_games,
        seed=3,
        rules_mix=parse_rules_mix(["default", "enemy_rat"]),
    )


def test_a_game_from_a_tagged_position_plays_the_tagged_rules_of_the_mix(tmp_path) -> None:
    tagged = _play_mix(tmp_path, [f"{HOLE} rules=default", f"{_opening(4)} rules=default"], fraction=1.0)
    assert {r.extra["rules_name"] for r in tagged.records} == {"default"}
    assert all(RuleSet.from_dict(r.rules) == RuleSet() for r in tagged.records)
    untagged = _play_mix(tmp_path, [HOLE, _opening(4)], fraction=1.0)  # the same seeds draw both rule sets
    assert {r.extra["rules_name"] for r in untagged.records} == {"default", "enemy_rat"}
    half = _play_mix(tmp_path, [f"{HOLE} rules=enemy_rat"], fraction=0.5, num_games=12)
    started = {"start_index" in r.extra for r in half.records}
    assert started == {True, False}
    for r in half.records:
        if "start_index" in r.extra:
            assert r.extra["rules_name"] == "enemy_rat" and r.start == HOLE
    with pytest.raises(StartsError, match="rules=keeps_rank is no rule set of train.rules_mix"):
        _play_mix(tmp_path, [f"{HOLE} rules=keeps_rank"], fraction=1.0)
