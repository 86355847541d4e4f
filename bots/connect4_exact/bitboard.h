/*
 * Connect Four on bitboards, for the compiled exact search (module.c): the board's layout, the bit
 * tricks the search asks at every node, and the score bounds by the number of stones played. The layout
 * is games/connect4.py's: each column takes 7 bits, bottom cell first, the 7th a spare bit that is
 * never a cell, so that shifts along a line cannot wrap from one column into the next. Cell (column, row)
 * is bit column * 7 + row. A position is `mask` (every stone) and `current` (the side to move's stones);
 * `current + mask` is a unique key below 2^49.
 */
#ifndef CONNECT4_EXACT_BITBOARD_H
#define CONNECT4_EXACT_BITBOARD_H

#include <stdint.h>

#define WIDTH 7
#define HEIGHT 6
#define CELLS (WIDTH * HEIGHT)
#define COLUMN_BITS (HEIGHT + 1)

/* One bit on the bottom cell of every column. */
#define BOTTOM UINT64_C(0x0040810204081)
/* Every playable cell: the bottom row times a column of six ones; the spare bits stay clear. */
#define BOARD (BOTTOM * ((UINT64_C(1) << HEIGHT) - 1))

static inline int
popcount(uint64_t bits)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(bits);
#else
    int count = 0;
    for (; bits; bits &= bits - 1)  /* each round clears the lowest set bit */
        count++;
    return count;
#endif
}

/* The column of a single-bit cell. */
static inline int
column_of(uint64_t cell)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(cell) / COLUMN_BITS;  /* trailing zeros: the cell's bit number */
#else
    int bit = 0;
    while (!(cell & 1)) {
        cell >>= 1;
        bit++;
    }
    return bit / COLUMN_BITS;
#endif
}

/* The lowest empty cell of every column that is not full: adding the bottom row to `mask` carries, in
   each column, past its stones into the first empty cell; a full column carries into its spare bit,
   which BOARD drops. */
static inline uint64_t
playable_cells(uint64_t mask)
{
    return (mask + BOTTOM) & BOARD;
}

/* Whether `stones` hold four in a row. For each direction, `pairs` marks every stone whose neighbour
   one step along the line (1 bit up, 7 right, 8 up-right, 6 down-right) is a stone too; two pairs two
   steps apart make a four. */
static int
has_four(uint64_t stones)
{
    uint64_t pairs = stones & (stones >> 1);
    if (pairs & (pairs >> 2))
        return 1;
    pairs = stones & (stones >> 7);
    if (pairs & (pairs >> 14))
        return 1;
    pairs = stones & (stones >> 8);
    if (pairs & (pairs >> 16))
        return 1;
    pairs = stones & (stones >> 6);
    return (pairs & (pairs >> 12)) != 0;
}

/* The empty cells that would complete a four for the owner of `stones`, playable yet or not: a cell
   completes a line when three stones line up with it, all three on one side of it or two on one side
   and one on the other. `back1` has a bit on every cell whose neighbour one step back along the line
   holds a stone, `ahead1` one step ahead, and so on. As winning_cells in games/connect4.py. */
static inline uint64_t
winning_cells(uint64_t stones, uint64_t mask)
{
    /* Vertical: only the cell on top of three stones. */
    uint64_t found = (stones << 1) & (stones << 2) & (stones << 3);
    uint64_t back1, back2, ahead1, ahead2;

    /* Horizontal: three behind the cell, or two behind and one ahead; then the mirror images. */
    back1 = stones << 7, back2 = stones << 14, ahead1 = stones >> 7, ahead2 = stones >> 14;
    found |= (back1 & back2 & ((stones << 21) | ahead1)) | (ahead1 & ahead2 & ((stones >> 21) | back1));
    /* Diagonal rising to the right: a step is one column right and one row up, 8 bits. */
    back1 = stones << 8, back2 = stones << 16, ahead1 = stones >> 8, ahead2 = stones >> 16;
    found |= (back1 & back2 & ((stones << 24) | ahead1)) | (ahead1 & ahead2 & ((stones >> 24) | back1));
    /* Diagonal falling to the right: one column right and one row down, 6 bits. */
    back1 = stones << 6, back2 = stones << 12, ahead1 = stones >> 6, ahead2 = stones >> 12;
    found |= (back1 & back2 & ((stones << 18) | ahead1)) | (ahead1 & ahead2 & ((stones >> 18) | back1));
    /* Taken cells and the spare bits are no threats. */
    return found & (BOARD ^ mask);
}

/* A column's rank in the centre-first order (3, 2, 4, 1, 5, 0, 6), higher first: ties of the move
   ordering go to the more central column, which takes part in more lines. */
static const int CENTRE_RANK[WIDTH] = {1, 3, 5, 6, 4, 2, 0};

/* The columns from the centre outwards. */
static const int CENTRE_FIRST[WIDTH] = {3, 2, 4, 1, 5, 0, 6};

/* Score bounds by the number of stones played (`ply`), as the tables of bots/connect4_exact_search.py. */

/* The side to move's score when the opponent wins with its next stone. */
static inline int loss_next(int ply) { return -((CELLS - ply) / 2); }
/* Winning with the stone about to be played. */
static inline int win_next(int ply) { return (CELLS + 1 - ply) / 2; }
/* The best score when the side to move cannot win at once: a win with its second stone. */
static inline int win_second(int ply) { return (CELLS - 1 - ply) / 2; }
/* The best score when moreover every move leaves the opponent a safe reply (ply <= CELLS - 3). */
static inline int win_third(int ply) { return (CELLS - 3 - ply) / 2; }
/* The worst score when the opponent cannot win with its next stone (ply <= CELLS - 2). */
static inline int loss_second(int ply) { return -((CELLS - 2 - ply) / 2); }

/* Python's `value // 2`, which rounds down where C's division rounds towards zero. */
static inline int floor_half(int value) { return (value - (value < 0)) / 2; }

/* The moves that do not hand the opponent a win at once. A playable cell where the opponent would complete
   a four must be taken (two of them: every move loses); and never play just below such a cell, which
   would make it playable: `threats >> 1` is the cell below each threat, in the same column. Meant for a
   side to move that cannot win at once. See ConnectFour.non_losing_moves. */
static inline uint64_t
non_losing_moves(uint64_t current, uint64_t mask)
{
    uint64_t threats = winning_cells(current ^ mask, mask);
    uint64_t possible = playable_cells(mask);
    uint64_t forced = possible & threats;
    if (forced) {
        if (forced & (forced - 1)) /* clearing the lowest bit leaves another: two threats to block */
            return 0;
        possible = forced;
    }
    return possible & ~(threats >> 1);
}

#endif
