/* Othello for the kernel: games/othello.py's rules, bots/evaluation/othello.py's numbers.
 *
 * The layout is the Python module's: bit 8 * row + column is a square, row 0 at the top, so a1 is bit 0
 * and h8 bit 63. A move is a square, or PASS (64) for a side with no placement while its opponent has
 * one. Here a position keeps the side to move's discs and the opponent's, and the seat to move; the
 * Python state and key name the discs by colour, Black's first.
 */
#include "kernel.h"

#define PASS 64
#define MAX_MOVES 64 /* at most 60 empty squares; PASS is the one move when there is no placement */
#define GAME_TYPE_NAME "bots._kernel.Othello"
#define GAME_ADD_FUNCTION kernel_add_othello

/* Every square off column a: where a step east from column h would land after wrapping round. */
#define NOT_A 0xFEFEFEFEFEFEFEFEULL
/* Every square off column h: where a step west from column a would land after wrapping round. */
#define NOT_H 0x7F7F7F7F7F7F7F7FULL
#define CORNERS (1ULL << 0 | 1ULL << 7 | 1ULL << 56 | 1ULL << 63)
#define SQUARE(name_column, name_row) (1ULL << (8 * ((name_row) - 1) + (name_column) - 'a'))

/* bots/evaluation/othello.py's weights. */
enum {
    MOBILITY_WEIGHT = 8,
    FRONTIER_WEIGHT = 4,
    CORNER_WEIGHT = 60,
    X_SQUARE_WEIGHT = -40,
    C_SQUARE_WEIGHT = -15,
    ENDGAME_EMPTIES = 20,
    SAFE_NEIGHBOUR_WEIGHT = 5,
};

static const int8_t SQUARE_WEIGHTS[64] = {
    100, -20, 10,  5,  5, 10, -20, 100,
    -20, -50, -2, -2, -2, -2, -50, -20,
     10,  -2,  1,  1,  1,  1,  -2,  10,
      5,  -2,  1,  0,  0,  1,  -2,   5,
      5,  -2,  1,  0,  0,  1,  -2,   5,
     10,  -2,  1,  1,  1,  1,  -2,  10,
    -20, -50, -2, -2, -2, -2, -50, -20,
    100, -20, 10,  5,  5, 10, -20, 100,
};

/* Each corner with its X-square (diagonal neighbour) and its two C-squares (edge neighbours). */
static const uint64_t CORNER_NEIGHBOURS[4][3] = {
    {SQUARE('a', 1), SQUARE('b', 2), SQUARE('b', 1) | SQUARE('a', 2)},
    {SQUARE('h', 1), SQUARE('g', 2), SQUARE('g', 1) | SQUARE('h', 2)},
    {SQUARE('a', 8), SQUARE('b', 7), SQUARE('a', 7) | SQUARE('b', 8)},
    {SQUARE('h', 8), SQUARE('g', 7), SQUARE('h', 7) | SQUARE('g', 8)},
};

typedef struct {
    uint64_t own;      /* the side to move's discs */
    uint64_t opponent; /* the other side's */
    int turn;          /* the seat to move: 0 Black, 1 White */
    /* Each side's placements, worked out when first asked: a node asks several times. */
    uint64_t own_moves, opponent_moves;
    uint8_t own_moves_known, opponent_moves_known;
} Position;

typedef uint8_t Move; /* a square 0-63, or PASS */

typedef struct {
    uint64_t black, white;
    int turn;
} Key;

typedef struct {
    int64_t counts[2][PASS + 1];
} History;

/* One step of every disc of bits in one of the eight directions: a shift by 1 (east-west), 8 (south-
 * north), 9 (south-east, north-west) or 7 (south-west, north-east), left for the first, right for the
 * second. A step east lands on column a only by wrapping round from column h, so NOT_A drops it; a step
 * west, NOT_H. */
enum { EAST, WEST, SOUTH, NORTH, SOUTH_EAST, NORTH_WEST, SOUTH_WEST, NORTH_EAST, DIRECTIONS };

static inline uint64_t step(uint64_t bits, int direction)
{
    switch (direction) {
    case EAST: return (bits << 1) & NOT_A;
    case WEST: return (bits >> 1) & NOT_H;
    case SOUTH: return bits << 8;
    case NORTH: return bits >> 8;
    case SOUTH_EAST: return (bits << 9) & NOT_A;
    case NORTH_WEST: return (bits >> 9) & NOT_H;
    case SOUTH_WEST: return (bits << 7) & NOT_H;
    default: return (bits >> 7) & NOT_A; /* NORTH_EAST */
    }
}

/* games.othello.legal_placements: in each direction, own discs flood through the opponent's runs (a run
 * is six discs at most, so six steps); one step past a run onto an empty square is a placement. */
static uint64_t legal_placements(uint64_t own, uint64_t opponent)
{
    uint64_t empty = ~(own | opponent);
    uint64_t moves = 0;
    for (int direction = 0; direction < DIRECTIONS; direction++) {
        uint64_t run = step(own, direction) & opponent;
        for (int length = 1; length < 6; length++) {
            run |= step(run, direction) & opponent;
        }
        moves |= step(run, direction) & empty;
    }
    return moves;
}

/* games.othello.flips: the opponent discs a disc placed on square turns over. From the square, a run of
 * opponent discs floods out in each direction as in legal_placements; it flips if one of ours ends it. */
static uint64_t flips(uint64_t own, uint64_t opponent, int square)
{
    uint64_t placed = 1ULL << square, flipped = 0;
    for (int direction = 0; direction < DIRECTIONS; direction++) {
        uint64_t run = step(placed, direction) & opponent;
        for (int length = 1; length < 6; length++) {
            run |= step(run, direction) & opponent;
        }
        if (step(run, direction) & own) {
            flipped |= run;
        }
    }
    return flipped;
}

static uint64_t own_moves(Position *position)
{
    if (!position->own_moves_known) {
        position->own_moves = legal_placements(position->own, position->opponent);
        position->own_moves_known = 1;
    }
    return position->own_moves;
}

static uint64_t opponent_moves(Position *position)
{
    if (!position->opponent_moves_known) {
        position->opponent_moves = legal_placements(position->opponent, position->own);
        position->opponent_moves_known = 1;
    }
    return position->opponent_moves;
}

static void set_discs(Position *position, uint64_t own, uint64_t opponent, int turn)
{
    position->own = own;
    position->opponent = opponent;
    position->turn = turn;
    position->own_moves_known = position->opponent_moves_known = 0;
}

static int side_to_move(const Position *position)
{
    return position->turn;
}

static int is_over(Position *position)
{
    return !own_moves(position) && !opponent_moves(position);
}

static int generate_moves(Position *position, Move *moves)
{
    uint64_t placements = own_moves(position);
    if (!placements) {
        if (!opponent_moves(position)) {
            return 0;
        }
        moves[0] = PASS;
        return 1;
    }
    int count = 0;
    for (; placements; placements &= placements - 1) { /* clears the lowest bit: squares ascending */
        moves[count++] = (Move)lowest_bit(placements);
    }
    return count;
}

static void play(const Position *position, const Move *move, Position *child)
{
    if (*move == PASS) { /* the same discs, the other side to move: each side's moves are still known */
        *child = *position;
        child->own = position->opponent;
        child->opponent = position->own;
        child->turn = 1 - position->turn;
        child->own_moves = position->opponent_moves;
        child->opponent_moves = position->own_moves;
        child->own_moves_known = position->opponent_moves_known;
        child->opponent_moves_known = position->own_moves_known;
        return;
    }
    uint64_t flipped = flips(position->own, position->opponent, *move);
    uint64_t mover = position->own | flipped | 1ULL << *move;
    set_discs(child, position->opponent ^ flipped, mover, 1 - position->turn);
}

/* A finished game: more discs wins. */
static int final_score(Position *position, int ply)
{
    int own = popcount(position->own), opponent = popcount(position->opponent);
    return own > opponent ? WIN - ply : own < opponent ? ply - WIN : 0;
}

/* games.othello.neighbours: every square next to one of bits, bits included: widen each row by a
 * square either way, then each column. */
static uint64_t neighbours(uint64_t bits)
{
    uint64_t spread = bits | ((bits << 1) & NOT_A) | ((bits >> 1) & NOT_H);
    return spread | spread << 8 | spread >> 8;
}

static int difference(uint64_t own, uint64_t opponent, uint64_t squares)
{
    return popcount(own & squares) - popcount(opponent & squares);
}

static int evaluate(Position *position)
{
    uint64_t own = position->own, opponent = position->opponent, empty = ~(own | opponent);
    int score = MOBILITY_WEIGHT * (popcount(own_moves(position)) - popcount(opponent_moves(position)));
    score -= FRONTIER_WEIGHT * difference(own, opponent, neighbours(empty));
    score += CORNER_WEIGHT * difference(own, opponent, CORNERS);
    uint64_t x_squares = 0, c_squares = 0; /* those of the empty corners */
    for (int corner = 0; corner < 4; corner++) {
        if (CORNER_NEIGHBOURS[corner][0] & empty) {
            x_squares |= CORNER_NEIGHBOURS[corner][1];
            c_squares |= CORNER_NEIGHBOURS[corner][2];
        }
    }
    score += X_SQUARE_WEIGHT * difference(own, opponent, x_squares);
    score += C_SQUARE_WEIGHT * difference(own, opponent, c_squares);
    int empties = popcount(empty);
    if (empties < ENDGAME_EMPTIES) {
        score += (ENDGAME_EMPTIES - empties) * (popcount(own) - popcount(opponent));
    }
    return score;
}

/* bots.evaluation.othello.order_key: corners first, the neighbours of empty corners last. */
static void order_keys(Position *position, const Move *moves, int count, int *keys)
{
    uint64_t occupied = position->own | position->opponent;
    for (int index = 0; index < count; index++) {
        int square = moves[index];
        keys[index] = square == PASS ? 0 : SQUARE_WEIGHTS[square];
        for (int corner = 0; square != PASS && corner < 4; corner++) {
            int beside_corner = ((CORNER_NEIGHBOURS[corner][1] | CORNER_NEIGHBOURS[corner][2]) >> square) & 1;
            if (beside_corner && (CORNER_NEIGHBOURS[corner][0] & occupied)) {
                keys[index] = SAFE_NEIGHBOUR_WEIGHT; /* its corner is taken: an ordinary square */
            }
        }
    }
}

static Key key_of(const Position *position)
{
    Key key;
    key.black = position->turn == 0 ? position->own : position->opponent;
    key.white = position->turn == 0 ? position->opponent : position->own;
    key.turn = position->turn;
    return key;
}

static int same_key(const Key *first, const Key *second)
{
    return first->black == second->black && first->white == second->white && first->turn == second->turn;
}

/* hash((black, white, turn)). */
static uint64_t key_hash(const Key *key)
{
    uint64_t items[3] = {hash_int(key->black), hash_int(key->white), (uint64_t)key->turn};
    return hash_tuple(items, 3);
}

static long long perft(Position *position, int depth)
{
    if (depth == 0) {
        return 1;
    }
    if (depth == 1) { /* bulk counting: the placements, or the one pass, or nothing once over */
        uint64_t placements = own_moves(position);
        return placements ? popcount(placements) : opponent_moves(position) ? 1 : 0;
    }
    Move moves[MAX_MOVES];
    int count = generate_moves(position, moves);
    long long total = 0;
    Position child;
    for (int index = 0; index < count; index++) {
        play(position, &moves[index], &child);
        total += perft(&child, depth - 1);
    }
    return total;
}

/* bots/speedups.py's state of an Othello position: (black, white, turn). */
static int position_from_state(PyObject *state, Position *position, int Py_UNUSED(plies_ahead))
{
    uint64_t black, white;
    long turn = -1;
    if (PyTuple_GET_SIZE(state) != 3 || board_from_python(PyTuple_GET_ITEM(state, 0), &black) < 0
        || board_from_python(PyTuple_GET_ITEM(state, 1), &white) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "expected an Othello state (black, white, turn), got %R", state);
        }
        return -1;
    }
    turn = PyLong_AsLong(PyTuple_GET_ITEM(state, 2));
    if ((turn != 0 && turn != 1) || (black & white)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "not an Othello position: %R", state);
        }
        return -1;
    }
    set_discs(position, turn == 0 ? black : white, turn == 0 ? white : black, (int)turn);
    return 0;
}

static void endgame_init_order(void);

static int game_init(void)
{
    endgame_init_order();
    return 0;
}

#include "small_moves.h"
#include "negamax.h"
#include "othello_endgame.h"
#include "searcher_type.h"
