"""Reporting a tournament: its records rated (`summarize`), the printed table, results.json, the CSV files
and the crosstable PNG (`TournamentResult`).

    result = summarize(read_jsonl("runs/eval/games.jsonl"), players)   # games read back, rated again
    print(result.table())
    result.write("runs/eval")        # results.json, ratings.csv, pairings.csv, games.jsonl, crosstable.png

Scores are Red's against Blue's (`game_result`); a pairing's games are also taken as colour-swapped
pairs (`colour_swapped_pairs`, the pentanomial model).
"""

from __future__ import annotations

import csv
import io
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from agents.arena.errors import TournamentError
from agents.arena.ratings import (
    GameResult,
    PairStats,
    PentanomialStats,
    RatingTable,
    fit_ratings,
    head_to_head,
    pair_class,
    pentanomial_stats,
)
from agents.arena.records import GameRecord, write_jsonl
from agents.arena.settings import SPRT_DEFAULTS, TournamentSettings
from agents.common.io import PathLike, atomic_write_bytes, atomic_write_json, atomic_write_text

TABLE_WIDTH = 100
"""Columns of the printed report (`TournamentResult.table`): players appear there by label, P1, P2..."""


def game_result(rec: GameRecord) -> GameResult:
    """The record as a rating input: Red's score against Blue (ply caps and unfinished games count as draws)."""
    score = {"1-0": 1.0, "0-1": 0.0}.get(rec.result, 0.5)
    return GameResult(rec.red, rec.blue, score)


def colour_swapped_pairs(
    games: Sequence[GameRecord], players: Sequence[str]
) -> dict[tuple[str, str], tuple[list[tuple[float, float]], int]]:
    """Each pairing's games as colour-swapped pairs: {(a, b): (a's scores in each complete pair, games
    outside a pair)}, `a` the earlier of the two in `players`, pairs in schedule order.

    Games x and x + 1 (``extra["game"]``) are a pair when they are of one pairing (``extra["pairing"]``)
    and one opening (``extra["opening_index"]``), `a` playing Red in x and Blue in x + 1: the pairs
    `schedule` makes. Any other game is unpaired: the lone last game of an odd `games_per_pair`, a game
    whose partner is missing, a record without those indices."""
    index = {p: k for k, p in enumerate(players)}
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    played: dict[tuple[str, str], int] = {}
    for rec in games:
        key = (rec.red, rec.blue) if index.get(rec.red, -1) < index.get(rec.blue, -1) else (rec.blue, rec.red)
        pairs.setdefault(key, [])
        played[key] = played.get(key, 0) + 1
    by_game: dict[int, GameRecord] = {}
    for rec in games:
        x = rec.extra.get("game")
        if isinstance(x, int):
            by_game.setdefault(x, rec)
    for x in sorted(by_game):
        first, second = by_game[x], by_game.get(x + 1)
        a, b = first.red, first.blue
        if second is None or index.get(a, -1) >= index.get(b, -1) or (second.red, second.blue) != (b, a):
            continue
        if any(first.extra.get(k) is None or first.extra.get(k) != second.extra.get(k) for k in SAME_IN_A_PAIR):
            continue
        pairs[(a, b)].append((game_result(first).score, 1.0 - game_result(second).score))
    return {key: (found, played[key] - 2 * len(found)) for key, found in pairs.items()}


SAME_IN_A_PAIR = ("pairing", "opening_index")
"""Record extras the two games of a colour-swapped pair share."""


def pair_statistics(
    games: Sequence[GameRecord], players: Sequence[str], **sprt: float
) -> dict[tuple[str, str], PentanomialStats]:
    """`PentanomialStats` of each pairing from its colour-swapped pairs (`colour_swapped_pairs`); `sprt`:
    elo0, elo1, alpha, beta (`SPRT_DEFAULTS`)."""
    out = {}
    for (a, b), (pairs, unpaired) in colour_swapped_pairs(games, players).items():
        counts = [0] * 5
        for s1, s2 in pairs:
            counts[pair_class(s1, s2)] += 1
        draws = sum((s1 == 0.5) + (s2 == 0.5) for s1, s2 in pairs)
        out[(a, b)] = pentanomial_stats(a, b, counts, draws=draws, unpaired=unpaired, **{**SPRT_DEFAULTS, **sprt})
    return out


@dataclass
class TournamentResult:
    """Everything a tournament produced. Scores are from the row player's side."""

    players: list[str]
    games: list[GameRecord]
    pairings: list[PairStats]
    """Head-to-head statistics, `a` being the earlier player in `players`."""
    ratings: RatingTable
    points: np.ndarray
    """[P, P]: points of player i against player j."""
    counts: np.ndarray
    """[P, P]: games between i and j."""
    settings: Optional[TournamentSettings] = None
    """What the games were played with (None: games rated as they came, `summarize`'s defaults)."""
    workers: int = 0
    """The processes that played them (results.json's settings say it)."""
    seconds: float = 0.0
    pentanomial: list[PentanomialStats] = field(default_factory=list)
    """Each pairing's colour-swapped pairs (the pentanomial model), in the order of `pairings`."""
    sprt_stops: list[dict[str, Any]] = field(default_factory=list)
    """Pairings a gauntlet stopped on their pair SPRT's verdict (`SprtStop`): a, b, pairs, verdict, llr, the
    bound it passed, games_skipped (its games after the stop, never played or left out)."""

    @property
    def sprt(self) -> dict[str, float]:
        """The SPRTs' elo0, elo1, alpha and beta (the trinomial and the pentanomial one)."""
        return dict(SPRT_DEFAULTS) if self.settings is None else self.settings.sprt

    def score(self, a: str, b: str) -> float:
        """Mean score of `a` against `b` (NaN if they did not meet)."""
        i, j = self._index(a), self._index(b)
        return float(self.points[i, j] / self.counts[i, j]) if self.counts[i, j] else float("nan")

    def pair(self, a: str, b: str) -> PairStats:
        """Head-to-head statistics from `a`'s side."""
        for p in self.pairings:
            if (p.a, p.b) == (a, b):
                return p
            if (p.a, p.b) == (b, a):
                return _flip(p)
        raise TournamentError(f"{a!r} and {b!r} did not meet")

    def pairs(self, a: str, b: str) -> PentanomialStats:
        """Colour-swapped pair statistics (the pentanomial model) from `a`'s side."""
        for q in self.pentanomial:
            if (q.a, q.b) == (a, b):
                return q
            if (q.a, q.b) == (b, a):
                return pentanomial_stats(a, b, q.counts[::-1], draws=q.draws, unpaired=q.unpaired, **self.sprt)
        raise TournamentError(f"{a!r} and {b!r} did not meet")

    def _pentanomial(self, p: PairStats) -> Optional[PentanomialStats]:
        return next((q for q in self.pentanomial if (q.a, q.b) == (p.a, p.b)), None)

    def _index(self, name: str) -> int:
        try:
            return self.players.index(name)
        except ValueError:
            raise TournamentError(
                f"no player {name!r} in this tournament; players: {', '.join(self.players)}"
            ) from None

    def wdl(self, name: str) -> tuple[int, int, int]:
        """Wins, draws, losses of one player over all its games."""
        w = d = l_ = 0
        for rec in self.games:
            if name not in (rec.red, rec.blue):
                continue
            s = game_result(rec).score if rec.red == name else 1.0 - game_result(rec).score
            w, d, l_ = w + (s == 1.0), d + (s == 0.5), l_ + (s == 0.0)
        return w, d, l_

    def move_seconds(self, name: str) -> Optional[float]:
        """Mean seconds a move of one player took (its `select_move`, the openings' moves excluded), over the
        games that recorded it (``extra["think"]``, `play_game`); None where none did."""
        seconds = moves = 0.0
        for rec in self.games:
            think = rec.extra.get("think")
            if not isinstance(think, dict):
                continue
            for side, who in (("red", rec.red), ("blue", rec.blue)):
                if who == name and isinstance(think.get(side), dict):
                    seconds += float(think[side]["seconds"])
                    moves += int(think[side]["moves"])
        return seconds / moves if moves else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "players": self.players,
            "move_seconds": {name: _round(self.move_seconds(name)) for name in self.players},
            "settings": self._settings_dict(),
            "seconds": round(self.seconds, 3),
            "ratings": self.ratings.to_dict(),
            "pairings": [_pair_dict(p, self._pentanomial(p)) for p in self.pairings],
            "sprt": dict(self.sprt),
            "sprt_stops": list(self.sprt_stops),
            "crosstable": {
                "points": self.points.tolist(),
                "games": self.counts.tolist(),
            },
            "terminations": _terminations(self.games),
        }

    def _settings_dict(self) -> dict[str, Any]:
        """results.json's summary of the settings (its keys as they always were): no openings' text, the
        openings file's name under `openings`, the number of workers."""
        if self.settings is None:
            return {}
        s = self.settings
        return {
            "mode": s.mode,
            "games_per_pair": s.games_per_pair,
            "seed": s.seed,
            "workers": self.workers,
            "opening_plies": s.opening_plies,
            "openings": s.openings_file,
            "max_plies": s.max_plies,
            "rules": s.rules.to_dict(),
            "sprt_stop": s.sprt_stop,
        }

    def labels(self) -> list[str]:
        """The players' short names in the printed report, `P1`, `P2`... in player order."""
        return [f"P{k + 1}" for k in range(len(self.players))]

    def table(self) -> str:
        """A readable report within `TABLE_WIDTH` columns: the players' legend, ratings, pairings, crosstable.

        Players appear by label (`labels`) and the legend gives each one's full spec, wrapped at its commas;
        the ratings repeat the specs when they all fit. The files (`write`) keep the full specs everywhere."""
        out = io.StringIO()
        label = dict(zip(self.players, self.labels()))
        lw = max(len(v) for v in label.values())
        out.write("Players\n")
        for name in self.players:
            out.write(_legend(f"  {label[name]:<{lw}} = ", name) + "\n")
        rt = self.ratings

        def rating_rows(names: bool) -> list[str]:
            cell = {r.name: f"{label[r.name]:<{lw}}" + (f"  {r.name}" if names else "") for r in rt.ratings}
            pw = max(len("player"), *(len(c) for c in cell.values()))
            rows = [f"  {'#':>2}  {'player':<{pw}}  {'Elo':>6}  {'95% CI':>15}  {'games':>5}  {'W-D-L':>11}  score"]
            for k, r in enumerate(rt.ratings, 1):
                w, d, l_ = self.wdl(r.name)
                ci = f"[{r.ci_low:+.0f}, {r.ci_high:+.0f}]"
                rows.append(
                    f"  {k:>2}  {cell[r.name]:<{pw}}  {r.elo:>+6.0f}  {ci:>15}  {r.games:>5}  "
                    f"{f'{w}-{d}-{l_}':>11}  {r.score:.3f}"
                )
            return rows

        rows = rating_rows(names=True)
        if max(len(row) for row in rows) > TABLE_WIDTH:
            rows = rating_rows(names=False)
        out.write(
            f"\nRatings (Bradley-Terry, Elo scale, anchor {label[rt.anchor]} = {rt.elo(rt.anchor):+.0f}, 95% CI)\n"
        )
        out.write("\n".join(rows) + "\n")
        timed = {name: self.move_seconds(name) for name in self.players}
        if any(v is not None for v in timed.values()):
            each = [f"{label[n]} {'-' if v is None else f'{v:.3f}'}" for n, v in timed.items()]
            out.write(textwrap.fill("Seconds per move: " + ", ".join(each), TABLE_WIDTH, subsequent_indent="  "))
            out.write("\n")
        bounds = f"SPRT({self.sprt['elo0']:g},{self.sprt['elo1']:g})"
        out.write(
            f"\nPairings (first player's view; p = sign-test p-value of 'first is stronger'; {bounds} verdict;\n"
            "  below: its colour-swapped pairs LL-LD-DD/WL-WD-WW, their score, Elo, nElo, draws, SPRT on pairs)\n"
        )
        for p in self.pairings:
            pair = f"{label[p.a]:<{lw}} vs {label[p.b]:<{lw}}"
            out.write(
                f"  {pair}  {p.wins:>3}-{p.draws}-{p.losses:<3} score {p.score:.3f}  "
                f"Elo {p.elo_diff:+.0f} [{p.elo_low:+.0f}, {p.elo_high:+.0f}]  LOS {p.los:.3f}  "
                f"p {p.p_value:.2g}  {p.sprt}\n"
            )
            q = self._pentanomial(p)
            if q is not None:
                out.write(textwrap.fill(_pairs_line(q), TABLE_WIDTH, initial_indent="    ", subsequent_indent="      "))
                out.write("\n")
        for stop in self.sprt_stops:
            out.write(
                "\n"
                + textwrap.fill(
                    f"SPRT stop: {label[stop['a']]} vs {label[stop['b']]} stopped after {stop['pairs']} pairs on "
                    f"{stop['verdict']} (pair LLR {stop['llr']:+.2f} past {stop['bound']:+.2f}); "
                    f"{stop['games_skipped']} of its games not played",
                    TABLE_WIDTH,
                    subsequent_indent="  ",
                )
                + "\n"
            )
        out.write("\nCrosstable (row's points / games against column)\n")
        n = len(self.players)
        cells = [
            [
                "-" if i == j or not self.counts[i, j] else f"{_pts(self.points[i, j])}/{int(self.counts[i, j])}"
                for j in range(n)
            ]
            for i in range(n)
        ]
        cw = 2 + max(len(c) for c in [*label.values(), *(c for row in cells for c in row)])
        per = max(1, (TABLE_WIDTH - lw - 2) // cw)  # columns side by side; more players take several blocks
        for first in range(0, n, per):
            cols = range(first, min(n, first + per))
            out.write(
                ("\n" if first else "") + " " * (lw + 2) + "".join(f"{self.labels()[j]:>{cw}}" for j in cols) + "\n"
            )
            for i, name in enumerate(self.players):
                out.write(f"  {label[name]:<{lw}}" + "".join(f"{cells[i][j]:>{cw}}" for j in cols) + "\n")
        terms = ", ".join(f"{k} {v}" for k, v in _terminations(self.games).items())
        out.write(
            "\n"
            + textwrap.fill(
                f"{len(self.games)} games in {self.seconds:.1f}s; endings: {terms}", TABLE_WIDTH, subsequent_indent="  "
            )
            + "\n"
        )
        return out.getvalue()

    def write(self, out_dir: PathLike, *, image: bool = True) -> dict[str, Path]:
        """Write results.json, ratings.csv, pairings.csv, games.jsonl (and crosstable.png) atomically."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = {
            "json": d / "results.json",
            "ratings_csv": d / "ratings.csv",
            "pairings_csv": d / "pairings.csv",
            "games": d / "games.jsonl",
        }
        atomic_write_json(paths["json"], self.to_dict())
        atomic_write_text(paths["ratings_csv"], self._ratings_csv())
        atomic_write_text(paths["pairings_csv"], self._pairings_csv())
        write_jsonl(paths["games"], self.games)
        if image:
            png = crosstable_png(self)
            if png is not None:
                paths["image"] = d / "crosstable.png"
                atomic_write_bytes(paths["image"], png)
        return paths

    def _ratings_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "player", "elo", "ci_low", "ci_high", "games", "wins", "draws", "losses", "score"])
        for k, r in enumerate(self.ratings.ratings, 1):
            w.writerow(
                [
                    k,
                    r.name,
                    f"{r.elo:.1f}",
                    f"{r.ci_low:.1f}",
                    f"{r.ci_high:.1f}",
                    r.games,
                    *self.wdl(r.name),
                    f"{r.score:.4f}",
                ]
            )
        return buf.getvalue()

    def _pairings_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = list(_pair_dict(self.pairings[0], None).keys()) if self.pairings else ["a", "b"]
        w.writerow(keys)
        for p in self.pairings:
            d = _pair_dict(p, self._pentanomial(p))
            w.writerow([f"{d[k]:.4g}" if isinstance(d[k], float) else ("" if d[k] is None else d[k]) for k in keys])
        return buf.getvalue()


def _pts(x: float) -> str:
    return f"{x:g}"


def _legend(head: str, spec: str) -> str:
    """`head` + `spec`, wrapped after its commas (a longer piece anywhere) to `TABLE_WIDTH` columns."""
    room = TABLE_WIDTH - len(head)
    parts = spec.split(",")
    lines, line = [], ""
    for piece in [p + "," for p in parts[:-1]] + parts[-1:]:
        if line and len(line) + len(piece) > room:
            lines.append(line)
            line = ""
        while len(piece) > room:
            lines.append(piece[:room])
            piece = piece[room:]
        line += piece
    lines.append(line)
    return head + ("\n" + " " * len(head)).join(lines)


def _flip(p: PairStats) -> PairStats:
    from agents.arena.ratings import pair_stats

    return pair_stats(p.b, p.a, p.losses, p.draws, p.wins)


def _pairs_line(q: PentanomialStats) -> str:
    """One pairing's colour-swapped pairs as the printed table shows them."""
    nelo = "-" if q.nelo is None else f"{q.nelo:+.0f}"
    line = (
        f"pairs {'-'.join(map(str, q.counts))}  score {q.score:.3f}  "
        f"Elo {q.elo_diff:+.0f} [{q.elo_low:+.0f}, {q.elo_high:+.0f}]  nElo {nelo}  "
        f"draws {q.draw_ratio:.0%}  {q.sprt}"
    )
    return line + (f"  ({q.unpaired} unpaired)" if q.unpaired else "")


PAIR_KEYS = (
    "pairs",
    "pairs_ll",
    "pairs_ld",
    "pairs_dd_wl",
    "pairs_wd",
    "pairs_ww",
    "unpaired",
    "pairs_score",
    "pairs_elo_diff",
    "pairs_elo_low",
    "pairs_elo_high",
    "nelo",
    "draw_ratio",
    "pairs_sprt_llr",
    "pairs_sprt",
)
"""The pentanomial columns of results.json's pairings and pairings.csv, after the trinomial ones."""


def _pair_dict(p: PairStats, q: Optional[PentanomialStats] = None) -> dict[str, Any]:
    pairs: dict[str, Any] = dict.fromkeys(PAIR_KEYS)
    if q is not None:
        values: list[Any] = [q.pairs, *q.counts, q.unpaired, q.score, q.elo_diff, q.elo_low, q.elo_high, q.nelo]
        values += [q.draw_ratio, q.sprt_llr, q.sprt]
        pairs = dict(zip(PAIR_KEYS, values))
    return {
        "a": p.a,
        "b": p.b,
        "games": p.games,
        "wins": p.wins,
        "draws": p.draws,
        "losses": p.losses,
        "score": p.score,
        "elo_diff": p.elo_diff,
        "elo_low": p.elo_low,
        "elo_high": p.elo_high,
        "los": p.los,
        "p_value": p.p_value,
        "sprt_llr": p.sprt_llr,
        "sprt": p.sprt,
        **pairs,
    }


def _terminations(games: Sequence[GameRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in games:
        key = g.termination or "unfinished"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def crosstable_png(result: TournamentResult, cell: int = 64) -> Optional[bytes]:
    """The crosstable as a PNG (cells coloured by the row's score), or None when Pillow is not installed."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return None
    n = len(result.players)
    label_w = 12 + 7 * max(len(p) for p in result.players)
    w, h = label_w + n * cell + 8, 28 + n * cell + 8
    img = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for j in range(n):
        draw.text((label_w + j * cell + cell // 2 - 6, 8), f"P{j + 1}", fill=(0, 0, 0))
    for i, name in enumerate(result.players):
        y = 28 + i * cell
        draw.text((6, y + cell // 2 - 6), f"P{i + 1} {name}", fill=(0, 0, 0))
        for j in range(n):
            x = label_w + j * cell
            if i == j or not result.counts[i, j]:
                colour = (220, 220, 220)
                text = ""
            else:
                s = result.points[i, j] / result.counts[i, j]
                colour = (int(230 - 150 * s), int(80 + 150 * s), 90)
                text = f"{s:.2f}"
            draw.rectangle([x, y, x + cell - 2, y + cell - 2], fill=colour)
            draw.text((x + cell // 2 - 12, y + cell // 2 - 6), text, fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def summarize(
    games: Sequence[GameRecord],
    players: Sequence[str],
    settings: Optional[TournamentSettings] = None,
    *,
    workers: int = 0,
    seconds: float = 0.0,
    sprt_stops: Sequence[dict[str, Any]] = (),
) -> TournamentResult:
    """Rate a list of game records (from `run_tournament` or read back from a games.jsonl).

    settings: the anchor, the prior and the SPRTs' bounds (None: the defaults of `TournamentSettings`);
    workers, seconds: how they were played, for the report; sprt_stops: the pairings a gauntlet stopped
    (`TournamentResult.sprt_stops`)."""
    rated = settings if settings is not None else TournamentSettings()
    bounds = rated.sprt
    players = list(players)
    index = {p: k for k, p in enumerate(players)}
    n = len(players)
    points = np.zeros((n, n))
    counts = np.zeros((n, n))
    results = []
    for rec in games:
        r = game_result(rec)
        if r.a not in index or r.b not in index:
            raise TournamentError(f"game between {r.a!r} and {r.b!r}: not among the players {', '.join(players)}")
        i, j = index[r.a], index[r.b]
        points[i, j] += r.score
        points[j, i] += 1.0 - r.score
        counts[i, j] += 1
        counts[j, i] += 1
        # Orient every result as (earlier player, later player) so pairings read in player order.
        results.append(r if i < j else GameResult(r.b, r.a, 1.0 - r.score))
    ratings = fit_ratings(results, players, anchor=rated.anchor, prior_games=rated.prior_games)
    pairings = sorted(head_to_head(results, **bounds), key=lambda p: (index[p.a], index[p.b]))
    by_pairs = pair_statistics(games, players, **bounds)
    return TournamentResult(
        players=players,
        games=list(games),
        pairings=pairings,
        ratings=ratings,
        points=points,
        counts=counts,
        settings=settings,
        workers=workers,
        seconds=seconds,
        pentanomial=[by_pairs[(p.a, p.b)] for p in pairings if (p.a, p.b) in by_pairs],
        sprt_stops=list(sprt_stops),
    )


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 4)
