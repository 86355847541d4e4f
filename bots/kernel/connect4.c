/* Connect Four for the kernel: games/connect4.py's bitboards, bots/evaluation/connect4.py's numbers.
 *
 * The layout is the Python module's: column c takes bits 7c to 7c + 5, bottom cell first, and a spare
 * bit on top of each column keeps the shifts that find lines from wrapping into the next column. A
 * position is the side to move's stones (current) and every stone (mask). Python's ints have no top
 * bit; here the boards are 64 bits wide, and every left shift that could overflow is masked to the
 * board afterwards in both codes, so the bits lost here are bits the Python code drops too.
 */
#include "kernel.h"

#define WIDTH 7
#define HEIGHT 6
#define COLUMN_BITS 7
#define MAX_MOVES WIDTH
#define GAME_TYPE_NAME "bots._kernel.Connect4"
#define GAME_ADD_FUNCTION kernel_add_connect4

/* One bit on the bottom cell of each column: bits 0, 7, ..., 42. */
#define BOTTOM 0x0000040810204081ULL
/* Every playable cell: the bottom row repeated over six rows (BOTTOM * 0b111111); spare bits clear. */
#define BOARD (BOTTOM * 0x3FULL)
#define COLUMN_MASK(column) (0x3FULL << (column) * COLUMN_BITS)
#define TOP_CELL(column) (1ULL << ((HEIGHT - 1) + (column) * COLUMN_BITS))
/* bots/evaluation/connect4.py's row parities (rows 1, 3, 5 from the bottom are odd) and its centre. */
#define ODD_ROWS (BOTTOM | BOTTOM << 2 | BOTTOM << 4)
#define EVEN_ROWS (BOTTOM << 1 | BOTTOM << 3 | BOTTOM << 5)
#define CENTRE COLUMN_MASK(WIDTH / 2)

/* bots/evaluation/connect4.py's weights. */
enum {
    WIN_NOW = 2000,
    LOST_NOW = -2000,
    THREAT_WEIGHT = 40,
    PARITY_BONUS = 25,
    POTENTIAL_WEIGHT = 1,
    CENTRE_WEIGHT = 3,
    ORDER_WIN = 1000,
    ORDER_BLOCK = 500,
    ORDER_GIFT = -200,
    ORDER_WASTE = -50,
};

typedef struct {
    uint64_t current; /* the side to move's stones */
    uint64_t mask;    /* every stone */
    int won;          /* the side that just moved has four in a row */
} Position;

typedef uint8_t Move; /* a column, 0 to 6 */
typedef uint64_t Key; /* current + mask: the Python key */

typedef struct {
    int64_t counts[2][WIDTH];
} History;

/* games.connect4.has_four: each direction's pairs mark every stone whose neighbour one step along is a
 * stone too (a step is 1 bit up, 7 right, 8 up-right, 6 down-right); two pairs two steps apart are four. */
static int has_four(uint64_t stones)
{
    uint64_t vertical = stones & (stones >> 1);
    uint64_t horizontal = stones & (stones >> 7);
    uint64_t rising = stones & (stones >> 8);
    uint64_t falling = stones & (stones >> 6);
    return (vertical & (vertical >> 2)) || (horizontal & (horizontal >> 14)) || (rising & (rising >> 16))
           || (falling & (falling >> 12));
}

/* games.connect4.winning_cells: the empty cells where the owner of stones would complete a four. In
 * each direction a cell completes a line with three stones all behind it, all ahead, or two on one side
 * and one on the other; back1 is every cell whose neighbour one step back holds a stone, and so on. */
static uint64_t winning_cells(uint64_t stones, uint64_t mask)
{
    uint64_t found = (stones << 1) & (stones << 2) & (stones << 3); /* on top of three in a column */
    static const int steps[3] = {COLUMN_BITS, COLUMN_BITS + 1, COLUMN_BITS - 1};
    for (int index = 0; index < 3; index++) {
        int step = steps[index];
        uint64_t back1 = stones << step, back2 = stones << 2 * step;
        uint64_t ahead1 = stones >> step, ahead2 = stones >> 2 * step;
        found |= (back1 & back2 & ((stones << 3 * step) | ahead1))
                 | (ahead1 & ahead2 & ((stones >> 3 * step) | back1));
    }
    return found & (BOARD ^ mask);
}

/* games.connect4.playable_cells: adding the bottom row carries, in every column, past its stones into
 * its first empty cell; a full column carries into its spare bit, which the board mask drops. */
static uint64_t playable_cells(uint64_t mask)
{
    return (mask + BOTTOM) & BOARD;
}

static int side_to_move(const Position *position)
{
    return popcount(position->mask) & 1;
}

static int is_over(Position *position)
{
    return position->won || position->mask == BOARD;
}

static int generate_moves(Position *position, Move *moves)
{
    int count = 0;
    if (is_over(position)) {
        return 0;
    }
    for (int column = 0; column < WIDTH; column++) {
        if (!(position->mask & TOP_CELL(column))) {
            moves[count++] = (Move)column;
        }
    }
    return count;
}

static void play(const Position *position, const Move *move, Position *child)
{
    /* The bottom cell of the column added to the mask carries into the column's first empty cell. */
    uint64_t cell = (position->mask + (1ULL << *move * COLUMN_BITS)) & COLUMN_MASK(*move);
    /* The side to move becomes the opponent: it owns every old stone that was not the mover's. */
    child->current = position->current ^ position->mask;
    child->mask = position->mask | cell;
    child->won = has_four(position->current | cell);
}

/* A finished game: a four belongs to the side that just moved, so the side to move has lost. */
static int final_score(Position *position, int ply)
{
    return position->won ? ply - WIN : 0;
}

/* bots.evaluation.connect4._potential: stones counted once for every open line of four they are in.
 * starts marks the first cell of every line whose four cells are all stones or empty. */
static int potential(uint64_t stones, uint64_t empty)
{
    static const int steps[4] = {1, COLUMN_BITS, COLUMN_BITS + 1, COLUMN_BITS - 1};
    uint64_t free_cells = stones | empty;
    int total = 0;
    for (int index = 0; index < 4; index++) {
        int step = steps[index];
        uint64_t starts = free_cells & (free_cells >> step) & (free_cells >> 2 * step)
                          & (free_cells >> 3 * step);
        total += popcount(stones & starts) + popcount((stones >> step) & starts)
                 + popcount((stones >> 2 * step) & starts) + popcount((stones >> 3 * step) & starts);
    }
    return total;
}

static int evaluate(Position *position)
{
    uint64_t own = position->current, mask = position->mask, other = own ^ mask;
    uint64_t playable = playable_cells(mask);
    uint64_t own_threats = winning_cells(own, mask), other_threats = winning_cells(other, mask);
    if (own_threats & playable) {
        return WIN_NOW;
    }
    uint64_t forced = other_threats & playable;
    if (forced & (forced - 1)) { /* more than one bit: two threats to block at once */
        return LOST_NOW;
    }
    int first_player = side_to_move(position) == 0;
    uint64_t own_rows = first_player ? ODD_ROWS : EVEN_ROWS, other_rows = first_player ? EVEN_ROWS : ODD_ROWS;
    uint64_t empty = BOARD ^ mask;
    return THREAT_WEIGHT * (popcount(own_threats) - popcount(other_threats))
           + PARITY_BONUS * (popcount(own_threats & own_rows) - popcount(other_threats & other_rows))
           + POTENTIAL_WEIGHT * (potential(own, empty) - potential(other, empty))
           + CENTRE_WEIGHT * (popcount(own & CENTRE) - popcount(other & CENTRE));
}

/* bots.evaluation.connect4.order_key for each move: centre first, a win, then a block; a move that lets
 * the opponent win in the cell above goes last, one that fills the cell below our own threat is held back. */
static void order_keys(Position *position, const Move *moves, int count, int *keys)
{
    uint64_t playable = playable_cells(position->mask);
    uint64_t own_threats = winning_cells(position->current, position->mask);
    uint64_t other_threats = winning_cells(position->current ^ position->mask, position->mask);
    for (int index = 0; index < count; index++) {
        int column = moves[index];
        uint64_t cell = playable & COLUMN_MASK(column);
        int key = WIDTH / 2 - abs(column - WIDTH / 2);
        if (cell & own_threats) {
            key += ORDER_WIN;
        } else if (cell & other_threats) {
            key += ORDER_BLOCK;
        }
        if ((cell << 1) & other_threats) {
            key += ORDER_GIFT;
        } else if ((cell << 1) & own_threats) {
            key += ORDER_WASTE;
        }
        keys[index] = key;
    }
}

/* current + mask is unique: each column's stones plus its mask bits set the bit above its top stone. */
static Key key_of(const Position *position)
{
    return position->current + position->mask;
}

static int same_key(const Key *first, const Key *second)
{
    return *first == *second;
}

static uint64_t key_hash(const Key *key)
{
    return hash_int(*key); /* below 2**49: hash(key) is the key itself */
}

static long long perft(Position *position, int depth)
{
    if (depth == 0) {
        return 1;
    }
    Move moves[MAX_MOVES];
    int count = generate_moves(position, moves);
    if (depth == 1) {
        return count; /* bulk counting: the last ply is counted, not played */
    }
    long long total = 0;
    Position child;
    for (int index = 0; index < count; index++) {
        play(position, &moves[index], &child);
        total += perft(&child, depth - 1);
    }
    return total;
}

/* bots/speedups.py's state of a ConnectFour: (current, mask). */
static int position_from_state(PyObject *state, Position *position, int Py_UNUSED(plies_ahead))
{
    if (PyTuple_GET_SIZE(state) != 2 || board_from_python(PyTuple_GET_ITEM(state, 0), &position->current) < 0
        || board_from_python(PyTuple_GET_ITEM(state, 1), &position->mask) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "expected a Connect Four state (current, mask), got %R", state);
        }
        return -1;
    }
    if (position->mask & ~BOARD || position->current & ~position->mask) {
        PyErr_Format(PyExc_ValueError, "not a Connect Four position: %R", state);
        return -1;
    }
    position->won = has_four(position->current ^ position->mask);
    return 0;
}

static int game_init(void)
{
    return 0;
}

#include "small_moves.h"
#include "negamax.h"
#include "searcher_type.h"
