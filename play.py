"""Play Jungle against any player, in the browser or in the terminal.

    python play.py                              # opens the play page on http://127.0.0.1:8765/
    python play.py --port 0 --no-browser        # any free port; prints the URL
    python play.py --terminal --opponent normal --side blue
    python play.py --rules default --rule rank_order=dog_over_wolf

The page's server uses only the standard library, listens on 127.0.0.1 and
answers only its own page (see agents/play/server.py for its guarantees);
the game in progress is saved in --state-dir, so a reload or a restart
continues it. The opponent is built before anything starts, so a bad spec or
checkpoint stops play.py with one line; the page's computer then warms up in
the background (it says so, and when it is ready).
"""

from __future__ import annotations

import argparse
import sys
import threading
import webbrowser
from typing import Optional, Sequence

from agents.play.computer import ComputerError, ComputerWorkers, PlayerCache
from agents.play.errors import PlayError
from agents.play.game import PACES, PlayGame
from agents.play.levels import LEVELS
from agents.play.server import DEFAULT_PORT, DEFAULT_STATE_DIR, make_server
from agents.play.specs import CHECKPOINT_DIRS
from agents.play.terminal import run_terminal
from envs.rules import RuleSetError, add_rule_arguments, rules_from_arguments

LEVEL_LINES = "\n".join(f"  {level.name:<10} {level.about}" for level in LEVELS)


def port_number(text: str) -> int:
    """argparse type of --port: an integer in 0..65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not in 0..65535")
    return port


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Play Jungle (Dou Shou Qi) against the computer or a friend.",
        epilog=f"levels of --opponent:\n{LEVEL_LINES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--terminal", action="store_true", help="play in the terminal instead of the browser")
    add_rule_arguments(p)
    p.add_argument(
        "--opponent",
        default="beginner",
        help=f"a level ({', '.join(level.name for level in LEVELS)}), a checkpoint path or a player spec "
        "(default: beginner)",
    )
    p.add_argument("--side", default="red", choices=("red", "blue"), help="terminal: your side (Red moves first)")
    p.add_argument("--two-players", action="store_true", help="terminal: two people at one keyboard")
    p.add_argument(
        "--pace",
        default=None,
        choices=tuple(PACES),
        help="how long the computer takes (default: quick on the page, instant in the terminal)",
    )
    p.add_argument("--seed", type=int, default=None, help="terminal: seed for the computer player")
    p.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"page: port on 127.0.0.1 (0 = any free one; default {DEFAULT_PORT})",
    )
    p.add_argument("--no-browser", action="store_true", help="page: do not open a browser")
    p.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR), help="page: where the game in progress is saved")
    p.add_argument(
        "--checkpoint-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="page: a directory whose checkpoints the page may name (repeatable; checkpoints/ always)",
    )
    p.add_argument("--verbose", action="store_true", help="page: log every request")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        rules = rules_from_arguments(args)
    except (RuleSetError, OSError) as e:
        print(f"play.py: {e}", file=sys.stderr)
        return 2

    if args.terminal:
        try:
            game = PlayGame.new(
                mode="two_players" if args.two_players else "computer",
                human=args.side,
                opponent=args.opponent,
                pace=args.pace or "instant",
                rules=rules,
                rules_name=args.rules,
                seed=args.seed,
            )
        except PlayError as e:
            print(f"play.py: {e}", file=sys.stderr)
            return 2
        return run_terminal(game)

    # The opponent is built here, as the terminal does: a bad spec or checkpoint stops the start.
    building = f"Building the opponent {args.opponent} (up to a minute on a first run, which compiles its search)..."
    slow = threading.Timer(2.0, print, args=(building,), kwargs={"flush": True})
    slow.start()
    try:
        PlayerCache().get(PlayGame.new(opponent=args.opponent, rules=rules).job("computer"))
    except (PlayError, ComputerError) as e:
        print(f"play.py: --opponent: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    finally:
        slow.cancel()
    try:
        server = make_server(
            port=args.port,
            state_dir=args.state_dir,
            rules=rules,
            rules_name=args.rules,
            default_opponent=args.opponent,
            default_pace=args.pace or "quick",
            verbose=args.verbose,
            checkpoint_dirs=[*CHECKPOINT_DIRS, *args.checkpoint_dir],
        )
    except OSError as e:
        print(f"play.py: cannot listen on 127.0.0.1:{args.port}: {e} (try --port 0)", file=sys.stderr)
        return 2
    print(f"Jungle play page: {server.url}  (Ctrl-C to stop; games saved in {args.state_dir})", flush=True)
    pool = server.store.pool
    print(
        "Preparing the computer: its workers play one move of every level first, so that no move's time "
        "goes to compiling its search (a minute or two on a first run, seconds after)",
        flush=True,
    )
    threading.Thread(target=_announce_ready, args=(pool,), daemon=True).start()
    if not args.no_browser:
        threading.Thread(target=_open_browser, args=(server.url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nStopped.")
    finally:
        server.server_close()
    return 0


def _announce_ready(pool: ComputerWorkers) -> None:
    report = pool.wait_warm()
    if report is None:
        return
    seconds, failures = report
    for failure in failures:
        print(f"warning: the computer could not warm up {failure}", flush=True)
    print(f"The computer is ready (warm-up {seconds:.0f} s)", flush=True)


def _open_browser(url: str) -> None:
    try:
        webbrowser.open(url)
    except Exception:  # noqa: BLE001 - no browser is fine: the URL is printed
        pass


if __name__ == "__main__":
    sys.exit(main())
