/* A plain single-file C bitboard perft of Jungle's default rules (RULES.md),
 * the yardstick that bench/bench_rules.py measures the numba kernels against.
 *
 *     gcc -O2 -march=native -o perft bench/c/perft.c
 *     ./perft DEPTH MODE [REPEATS [JFEN]]
 *
 * MODE is "made" (every node made and unmade, the last ply included) or
 * "bulk" (the last ply counted by popcounts). JFEN defaults to the start
 * position. Prints one line: the leaf count, then the best wall seconds and
 * the best CPU seconds over REPEATS runs (default 1).
 *
 * It shares no code with the kernels: squares are numbered as there
 * (sq = rank * 7 + file, a1 = 0), one uint64 bitboard per side, a piece
 * list per side and a board of signed codes (+animal Red, -animal Blue).
 * Perft follows RULES.md: a move that wins (den, last capture) counts at
 * the last ply and ends its line earlier; a won position counts 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RED = 0, BLUE = 1 };
enum { RAT = 1, CAT, DOG, WOLF, LEOPARD, TIGER, LION, ELEPHANT };
enum { NSQ = 63 };

typedef uint64_t bb_t;

static bb_t WATER_BB, DEN_BB[2];
static int WATER[NSQ], TRAP_OWNER[NSQ], DEN_SQ[2] = {3, 59};
static bb_t WALK[NSQ];      /* orthogonal land neighbours */
static bb_t SWIM[NSQ];      /* every orthogonal neighbour (the rat) */
static bb_t LEAP[NSQ];      /* WALK plus the landing squares of river jumps */
static int JUMP_TO[NSQ][4]; /* landing square of a jump, -1 when none */
static bb_t OVER[NSQ][4];   /* the water squares a jump flies over */

typedef struct {
    int8_t board[NSQ];
    int8_t sq[2][9]; /* sq[side][animal]: square or -1 */
    int count[2];
    bb_t occ[2];
    int side;
} Pos;

static void init_tables(void) {
    static const int df[4] = {0, 1, 0, -1}, dr[4] = {1, 0, -1, 0};
    const int traps[2][3] = {{2, 4, 10}, {58, 60, 52}};
    for (int s = 0; s < NSQ; s++) {
        int f = s % 7, r = s / 7;
        WATER[s] = (r >= 3 && r <= 5) && (f == 1 || f == 2 || f == 4 || f == 5);
        if (WATER[s]) WATER_BB |= 1ULL << s;
        TRAP_OWNER[s] = -1;
    }
    for (int side = 0; side < 2; side++) {
        for (int k = 0; k < 3; k++) TRAP_OWNER[traps[side][k]] = side;
        DEN_BB[side] = 1ULL << DEN_SQ[side];
    }
    for (int s = 0; s < NSQ; s++) {
        int f0 = s % 7, r0 = s / 7;
        for (int d = 0; d < 4; d++) {
            JUMP_TO[s][d] = -1;
            int f = f0 + df[d], r = r0 + dr[d];
            if (f < 0 || f > 6 || r < 0 || r > 8) continue;
            int t = r * 7 + f;
            SWIM[s] |= 1ULL << t;
            if (!WATER[t]) { WALK[s] |= 1ULL << t; continue; }
            if (WATER[s]) continue;
            while (WATER[r * 7 + f]) {
                OVER[s][d] |= 1ULL << (r * 7 + f);
                f += df[d];
                r += dr[d];
            }
            JUMP_TO[s][d] = r * 7 + f;
            LEAP[s] |= 1ULL << (r * 7 + f);
        }
        LEAP[s] |= WALK[s];
    }
}

/* Rules 5-7 for the default rule set: may `side`'s `a` on `frm` take enemy `v` on `to`? */
static inline int can_capture(int side, int a, int frm, int v, int to) {
    if (WATER[frm] != WATER[to]) return 0;
    if (TRAP_OWNER[to] == side) return 1; /* the victim is in its opponent's trap: rank 0 */
    if (TRAP_OWNER[frm] == 1 - side) return 0; /* a trapped attacker is powerless */
    if (a == RAT && v == ELEPHANT) return 1;
    if (a == ELEPHANT && v == RAT) return 0;
    return a >= v;
}

/* `cand` without the enemy pieces on it that `a` on `frm` may not take (the rare path). */
static bb_t drop_untakeable(const Pos *p, int a, int frm, bb_t cand, bb_t victims) {
    do {
        int q = __builtin_ctzll(victims);
        victims &= victims - 1;
        int v = p->board[q] < 0 ? -p->board[q] : p->board[q];
        if (!can_capture(p->side, a, frm, v, q)) cand &= ~(1ULL << q);
    } while (victims);
    return cand;
}

/* The squares `p->side`'s `a` on `frm` may move to (rules 1-7); `own` holds the
 * mover's pieces and den, `rats` the rats in water. Inlined with `a` a constant. */
static inline __attribute__((always_inline)) bb_t
targets(const Pos *p, int a, int frm, bb_t own, bb_t rats) {
    bb_t cand;
    if (a == RAT) {
        cand = SWIM[frm] & ~own;
    } else if (a == LION || a == TIGER) {
        cand = LEAP[frm] & ~own;
        if (rats)
            for (int d = 0; d < 4; d++)
                if (OVER[frm][d] & rats) cand &= ~(1ULL << JUMP_TO[frm][d]);
    } else {
        cand = WALK[frm] & ~own;
    }
    bb_t victims = cand & p->occ[1 - p->side];
    return victims ? drop_untakeable(p, a, frm, cand, victims) : cand;
}

static inline bb_t water_rats(const Pos *p) {
    bb_t rats = 0;
    if (p->sq[RED][RAT] >= 0) rats |= 1ULL << p->sq[RED][RAT];
    if (p->sq[BLUE][RAT] >= 0) rats |= 1ULL << p->sq[BLUE][RAT];
    return rats & WATER_BB;
}

/* The squares each of the side to move's animals may move to, into cands[1..8]
 * (0 for a captured one); returns the number of moves. */
static int piece_targets(const Pos *p, bb_t *cands) {
    int side = p->side, n = 0;
    bb_t own = p->occ[side] | DEN_BB[side], rats = water_rats(p);
#pragma GCC unroll 8
    for (int a = RAT; a <= ELEPHANT; a++) {
        int frm = p->sq[side][a];
        cands[a] = frm < 0 ? 0 : targets(p, a, frm, own, rats);
        n += __builtin_popcountll(cands[a]);
    }
    return n;
}

/* Move the side to move's `a` from `frm` to `to`; return the captured code (0 if none). */
static inline int make(Pos *p, int a, int frm, int to) {
    int side = p->side, cap = p->board[to];
    if (cap) {
        p->sq[1 - side][cap < 0 ? -cap : cap] = -1;
        p->count[1 - side]--;
        p->occ[1 - side] &= ~(1ULL << to);
    }
    p->board[to] = p->board[frm];
    p->board[frm] = 0;
    p->sq[side][a] = (int8_t)to;
    p->occ[side] ^= (1ULL << frm) | (1ULL << to);
    p->side = 1 - side;
    return cap;
}

static inline void unmake(Pos *p, int a, int frm, int to, int cap) {
    int side = 1 - p->side;
    p->board[frm] = p->board[to];
    p->board[to] = (int8_t)cap;
    p->sq[side][a] = (int8_t)frm;
    p->occ[side] ^= (1ULL << frm) | (1ULL << to);
    if (cap) {
        p->sq[1 - side][cap < 0 ? -cap : cap] = (int8_t)to;
        p->count[1 - side]++;
        p->occ[1 - side] |= 1ULL << to;
    }
    p->side = side;
}

static int won(const Pos *p) {
    return p->board[DEN_SQ[BLUE]] > 0 || p->board[DEN_SQ[RED]] < 0 || !p->count[RED] || !p->count[BLUE];
}

/* perft of a position whose game goes on; `bulk` counts the last ply by popcounts
 * instead of making its moves, in the loop of the ply before. */
static uint64_t perft(Pos *p, int depth, int bulk) {
    bb_t cands[9], child[9];
    int n = piece_targets(p, cands);
    if (depth == 1 && bulk) return (uint64_t)n;
    int side = p->side, foe = 1 - side;
    uint64_t total = 0;
    for (int a = RAT; a <= ELEPHANT; a++) {
        int frm = p->sq[side][a];
        for (bb_t t = cands[a]; t; t &= t - 1) {
            int to = __builtin_ctzll(t), cap = make(p, a, frm, to);
            if (depth == 1)
                total++;
            else if (to != DEN_SQ[foe] && p->count[foe]) /* a win by rule 8 or 9 ends the line */
                total += bulk && depth == 2 ? (uint64_t)piece_targets(p, child) : perft(p, depth - 1, bulk);
            unmake(p, a, frm, to, cap);
        }
    }
    return total;
}

static int parse_jfen(Pos *p, const char *s) {
    static const char letters[] = ".RCDWPTLE";
    memset(p, 0, sizeof *p);
    memset(p->sq, -1, sizeof p->sq);
    int r = 8, f = 0;
    for (; *s && *s != ' '; s++) {
        if (*s == '/') {
            if (f != 7 || r == 0) return 0;
            r--;
            f = 0;
        } else if (*s >= '1' && *s <= '7') {
            f += *s - '0';
        } else {
            const char *hit = strchr(letters + 1, *s >= 'a' ? *s - 32 : *s);
            if (!hit || f > 6) return 0;
            int a = (int)(hit - letters), side = *s >= 'a' ? BLUE : RED, q = r * 7 + f++;
            if (p->sq[side][a] >= 0) return 0;
            p->board[q] = (int8_t)(side == RED ? a : -a);
            p->sq[side][a] = (int8_t)q;
            p->occ[side] |= 1ULL << q;
            p->count[side]++;
        }
        if (f > 7) return 0;
    }
    if (r != 0 || f != 7 || *s != ' ' || (s[1] != 'r' && s[1] != 'b')) return 0;
    p->side = s[1] == 'b' ? BLUE : RED;
    return 1;
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5 || (strcmp(argv[2], "made") && strcmp(argv[2], "bulk"))) {
        fprintf(stderr, "usage: %s DEPTH made|bulk [REPEATS [JFEN]]\n", argv[0]);
        return 2;
    }
    int depth = atoi(argv[1]), bulk = !strcmp(argv[2], "bulk");
    int repeats = argc > 3 ? atoi(argv[3]) : 1;
    const char *jfen = argc > 4 ? argv[4] : "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1";
    Pos p;
    init_tables();
    if (depth < 0 || repeats < 1 || !parse_jfen(&p, jfen)) {
        fprintf(stderr, "bad depth, repeats or JFEN\n");
        return 2;
    }
    uint64_t leaves = 0;
    double best_wall = 1e30, best_cpu = 1e30;
    for (int k = 0; k < repeats; k++) {
        double w = seconds(CLOCK_MONOTONIC), c = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (depth == 0) leaves = 1;
        else if (won(&p)) leaves = 0;
        else leaves = perft(&p, depth, bulk);
        w = seconds(CLOCK_MONOTONIC) - w;
        c = seconds(CLOCK_PROCESS_CPUTIME_ID) - c;
        if (w < best_wall) best_wall = w;
        if (c < best_cpu) best_cpu = c;
    }
    printf("%llu %.6f %.6f\n", (unsigned long long)leaves, best_wall, best_cpu);
    return 0;
}
