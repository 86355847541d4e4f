/*
 * The compiled exact search itself (module.c): negamax with null windows, the binary search on the score
 * that drives it, and the move that keeps a score. Each function does what its namesake in
 * bots/connect4_exact_search.py does, step for step; read that first.
 */
#ifndef CONNECT4_EXACT_SEARCH_H
#define CONNECT4_EXACT_SEARCH_H

#include <Python.h>
#include <stdint.h>
#include <stdio.h>

#include "bitboard.h"
#include "table.h"

/* A table entry marks a lower bound by adding this to it (an upper bound is stored as it is); scores
   lie in -21..21, so a stored value above 32 is a lower bound. As _LOWER_BOUND in the Python search. */
#define LOWER_BOUND 64

/* Nodes between two looks at pending signals, so that Ctrl-C stops a long search. */
#define SIGNAL_INTERVAL (UINT64_C(1) << 20)

typedef enum { RUNNING = 0, OVER_BUDGET, INTERRUPTED } Stop;

typedef struct {
    PyObject_HEAD
    Table *table;
    uint64_t nodes;            /* positions negamax visited */
    uint64_t decided_at_once;  /* positions score() settled without a search */
    uint64_t node_limit;       /* UINT64_MAX without a budget */
    uint64_t next_check;       /* the node count at which to look at the budget and signals again */
    PyObject *max_nodes;       /* the budget as given, for the exception; Py_None without one */
    Stop stop;
} Search;

/* Called when the node count passes `next_check`: whether the search may go on. */
static int
keep_going(Search *search)
{
    if (search->nodes > search->node_limit) {
        search->stop = OVER_BUDGET;
        return 0;
    }
    if (PyErr_CheckSignals() < 0) {
        search->stop = INTERRUPTED;
        return 0;
    }
    uint64_t next = search->nodes + SIGNAL_INTERVAL;
    search->next_check = next < search->node_limit ? next : search->node_limit;
    return 1;
}

/* The cells of `candidates` in the order the search tries them: the most threats the move leaves its
   player first, then centre first. An insertion sort on `order`, the count of threats above the column's
   centre rank, so that no two orders are equal. Returns how many cells it wrote to `cells`. */
static inline int
order_moves(uint64_t current, uint64_t mask, uint64_t candidates, uint64_t cells[WIDTH])
{
    int orders[WIDTH];
    int count = 0;
    for (; candidates; candidates &= candidates - 1) {
        uint64_t move = candidates & -candidates; /* the lowest set bit */
        int order = popcount(winning_cells(current | move, mask | move)) << 3 | CENTRE_RANK[column_of(move)];
        int place = count++;
        for (; place > 0 && orders[place - 1] < order; place--) {
            cells[place] = cells[place - 1];
            orders[place] = orders[place - 1];
        }
        cells[place] = move;
        orders[place] = order;
    }
    return count;
}

/*
 * The score of the position if it lies in (alpha, beta), else a bound on the same side of the window:
 * at most alpha when the score is, at least beta when the score is. The side to move must not be able to
 * win at once. After a stop (budget, Ctrl-C) it returns 0 and its callers return at once, storing nothing.
 */
static int
negamax(Search *search, uint64_t current, uint64_t mask, int ply, int alpha, int beta)
{
    if (++search->nodes > search->next_check && !keep_going(search))
        return 0;

    uint64_t possible = non_losing_moves(current, mask);
    if (!possible)
        return loss_next(ply); /* the opponent wins with its next stone */
    if (ply >= CELLS - 2)
        return 0; /* we play the last-but-one stone safely; the opponent's last one cannot win */

    /* Nobody wins with the next stone, which bounds the score from both sides. */
    if (alpha < loss_second(ply)) {
        alpha = loss_second(ply);
        if (alpha >= beta)
            return alpha;
    }
    if (beta > win_second(ply)) {
        beta = win_second(ply);
        if (alpha >= beta)
            return beta;
    }
    uint64_t key = current + mask;
    int bound;
    if (table_get(search->table, key, &bound)) {
        if (bound > LOWER_BOUND / 2) {
            bound -= LOWER_BOUND;
            if (alpha < bound) {
                alpha = bound;
                if (alpha >= beta)
                    return alpha;
            }
        }
        else if (beta > bound) {
            beta = bound;
            if (alpha >= beta)
                return beta;
        }
    }

    if (alpha >= win_third(ply)) {
        /* Only winning with our second stone beats alpha, that is a move after which the opponent has no
           safe reply: look for one without searching. */
        for (uint64_t remaining = possible; remaining; remaining &= remaining - 1) {
            uint64_t move = remaining & -remaining; /* the lowest set bit */
            uint64_t after = mask | move;
            uint64_t ours = winning_cells(current | move, after);
            uint64_t replies = playable_cells(after);
            uint64_t must_block = replies & ours;
            if (must_block) {
                if (must_block & (must_block - 1)) /* two to block: no safe reply */
                    goto found_a_win;
                replies = must_block;
            }
            if (!(replies & ~(ours >> 1)))
                goto found_a_win;
        }
        table_put(search->table, key, win_third(ply));
        return win_third(ply);
    found_a_win:
        table_put(search->table, key, win_second(ply) + LOWER_BOUND);
        return win_second(ply);
    }

    uint64_t moves[WIDTH];
    int count = order_moves(current, mask, possible, moves);
    uint64_t opponent = current ^ mask; /* the side to move in every child */
    /* Each child looks its slot up after a few dozen operations of its own: ask for all of them now, so
       that the memory fetches overlap that work and one another instead of stalling the search one by
       one (a table of 64 MB misses the cache nearly every time: this takes 40% off Test_L1_R1). */
    for (int index = 0; index < count; index++)
        table_prefetch(search->table, opponent + (mask | moves[index]));
    for (int index = 0; index < count; index++) {
        int score = -negamax(search, opponent, mask | moves[index], ply + 1, -beta, -alpha);
        if (search->stop)
            return 0;
        if (score >= beta) {
            table_put(search->table, key, score + LOWER_BOUND);
            return score;
        }
        if (score > alpha)
            alpha = score;
    }
    table_put(search->table, key, alpha);
    return alpha;
}

/* A position as the search reads it. */
typedef struct {
    uint64_t current;
    uint64_t mask;
    int ply;
} Board;

static inline int board_is_won(Board board) { return has_four(board.current ^ board.mask); }

static inline int board_is_over(Board board) { return board_is_won(board) || board.mask == BOARD; }

static inline int
board_can_win_next(Board board)
{
    return (winning_cells(board.current, board.mask) & playable_cells(board.mask)) != 0;
}

static inline Board
board_play(Board board, uint64_t move)
{
    Board child = {board.current ^ board.mask, board.mask | move, board.ply + 1};
    return child;
}

/* The score of an unfinished position that needs no search; 0 with `*decided` clear if it needs one. */
static int
score_at_once(Board board, int *decided)
{
    *decided = 1;
    if (board_can_win_next(board))
        return win_next(board.ply);
    if (!non_losing_moves(board.current, board.mask))
        return loss_next(board.ply);
    if (board.ply >= CELLS - 2)
        return 0;
    *decided = 0;
    return 0;
}

/* The exact score of `board`, finished or not: a binary search on the score whose every step is a null
   window search, "is the score above middle?". See PythonSearch.score in bots/connect4_exact_search.py. */
static int
exact_score(Search *search, Board board)
{
    int decided;
    if (board_is_won(board))
        return (board.ply + 1) / 2 - (CELLS / 2 + 1); /* the opponent won with its last stone */
    if (board.mask == BOARD)
        return 0;
    int at_once = score_at_once(board, &decided);
    if (decided) {
        search->decided_at_once++;
        return at_once;
    }
    /* The window starts one loss wider than the search could prove, as Pons' does. */
    int low = loss_next(board.ply), high = win_second(board.ply);
    while (low < high) {
        int middle = low + (high - low) / 2;
        /* Halfway towards zero rather than the middle: exact scores cluster near zero. */
        if (middle <= 0 && floor_half(low) < middle)
            middle = floor_half(low);
        else if (middle >= 0 && high / 2 > middle)
            middle = high / 2;
        int result = negamax(search, board.current, board.mask, board.ply, middle, middle + 1);
        if (search->stop)
            return 0;
        if (result <= middle)
            high = result;
        else
            low = result;
    }
    return low;
}

/* The playable cell of `column`, or 0 if the column is full. */
static inline uint64_t
cell_of_column(Board board, int column)
{
    return playable_cells(board.mask) & (UINT64_C(0x3F) << column * COLUMN_BITS);
}

/* A column that keeps `score` (the exact score of `board`, or a bound it is known to reach), or -1 once
   the game is over. -2 after a stop. See PythonSearch.best_move. */
static int
keeping_move(Search *search, Board board, int score)
{
    if (board_is_over(board))
        return -1;
    uint64_t winning = winning_cells(board.current, board.mask) & playable_cells(board.mask);
    uint64_t first_legal = 0;
    for (int index = 0; index < WIDTH; index++) {
        uint64_t cell = cell_of_column(board, CENTRE_FIRST[index]);
        if (cell & winning)
            return CENTRE_FIRST[index];
        if (!first_legal)
            first_legal = cell;
    }
    uint64_t cells[WIDTH];
    int count = order_moves(board.current, board.mask, non_losing_moves(board.current, board.mask), cells);
    if (count == 0)
        return column_of(first_legal); /* every move loses at once: any will do */
    if (count == 1)
        return column_of(cells[0]);
    for (int index = 0; index < count; index++) {
        Board child = board_play(board, cells[index]);
        int opponent_score;
        if (board_is_over(child))
            opponent_score = exact_score(search, child);
        else
            opponent_score = negamax(search, child.current, child.mask, child.ply, -score, -score + 1);
        if (search->stop)
            return -2;
        if (-opponent_score >= score)
            return column_of(cells[index]);
    }
    char message[80];
    snprintf(message, sizeof message, "no move keeps the score %d of %#llx", score,
             (unsigned long long)(board.current + board.mask));
    PyErr_SetString(PyExc_AssertionError, message);
    return -2;
}

#endif
