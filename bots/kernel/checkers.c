/* Checkers (English draughts) for the kernel: games/checkers.py's rules and bots/evaluation/checkers.py's
 * numbers.
 *
 * The layout is the Python module's: the 32 dark squares in PDN order, square n on bit n - 1, Black on
 * 1-12 moving towards higher numbers, White on 21-32. The diagonal geometry (which bit-index offsets are
 * steps and jumps from which squares) is worked out once from (row, column) coordinates, as the Python
 * module does, by game_init. A move is the path of squares a piece visits, as the Python tuple; the
 * draw rules need the positions since the last capture or man's move, which the search keeps on a stack
 * of keys (see Position.earlier).
 */
#include "kernel.h"

#define MAX_MOVES 256 /* far above any position of a game; a made-up one beyond this is refused */
#define MAX_PATH 17   /* a capture jumps at most the 16 squares between the landing squares, plus its start */
#define QUIET_PLY_LIMIT 80
#define REPETITION_MIN_QUIET 8 /* a position recurs at the earliest four plies later, twice eight */
#define GAME_TYPE_NAME "bots._kernel.Checkers"
#define GAME_ADD_FUNCTION kernel_add_checkers

#define ROW(row) (0xFU << 4 * (row))
#define SQUARE(number) (1U << ((number) - 1))
#define CENTRE (SQUARE(14) | SQUARE(15) | SQUARE(18) | SQUARE(19))
#define EVEN_ROWS (ROW(0) | ROW(2) | ROW(4) | ROW(6))
#define ODD_ROWS (ROW(1) | ROW(3) | ROW(5) | ROW(7))

/* bots/evaluation/checkers.py's weights. */
enum {
    MAN_VALUE = 100,
    KING_VALUE = 150,
    ADVANCE_WEIGHT = 3,
    BACK_ROW_WEIGHT = 10,
    CENTRE_WEIGHT = 6,
    TRADE_WEIGHT = 4,
    STARTING_PIECES = 24,
    CAPTURE_ORDER = 1000,
    KING_CAPTURE_ORDER = 200,
    CROWNING_ORDER = 500,
    CENTRE_ORDER = 1,
};

static const uint32_t CROWN_ROW[2] = {ROW(7), ROW(0)};
static const uint32_t BACK_ROW[2] = {ROW(0), ROW(7)};
static const int FORWARD[2] = {1, -1}; /* the row direction each seat's men move in */

typedef struct {
    uint64_t men;   /* Black's men | White's << 32, as in the Python key */
    uint64_t kings; /* likewise */
    int turn;
} Key;

typedef struct {
    uint32_t men[2], kings[2]; /* per seat, 0 Black */
    int turn;
    int quiet_plies; /* since the last capture or man's move (the 80-ply rule) */
    /* The keys of the positions since then, oldest first (threefold repetition): a slice of a stack that
     * the caller of position_from_state owns. A king's step appends the key of the position it leaves
     * just past this slice; a capture or a man's move starts an empty slice one further on, so that no
     * live slice of an ancestor is ever written over. */
    Key *earlier;
    int earlier_count;
} Position;

typedef struct {
    uint8_t squares[MAX_PATH]; /* PDN numbers, the origin first */
    uint8_t length;
    uint32_t captured; /* the squares jumped over: 0 for a step */
} Move;

/* The geometry, from game_init. */
typedef struct {
    uint32_t jumped, landing;
    int landing_index, row_step;
} Jump;
static Jump JUMPS[32][4];      /* per bit index, its jumps in the Python table's order of directions */
static int JUMP_COUNTS[32];
static int ROW_OF[32], COLUMN_OF[32];
/* [towards higher numbers, towards lower][shift 3, 4, 5]: the squares a step by that shift is one from. */
static uint32_t STEP_SOURCES[2][3];
static uint32_t JUMP_SOURCES[4];    /* games.checkers._JUMP_DOWN_LEFT, _DOWN_RIGHT, _UP_RIGHT, _UP_LEFT */

/* games.checkers._index_at: the bit index of (row, column), or -1 off the board. */
static int index_at(int row, int column)
{
    return row >= 0 && row < 8 && column >= 0 && column < 8 ? 4 * row + column / 2 : -1;
}

static int game_init(void)
{
    static const int directions[4][2] = {{1, -1}, {1, 1}, {-1, -1}, {-1, 1}}; /* games.checkers' order */
    memset(JUMP_COUNTS, 0, sizeof(JUMP_COUNTS));
    memset(STEP_SOURCES, 0, sizeof(STEP_SOURCES));
    memset(JUMP_SOURCES, 0, sizeof(JUMP_SOURCES));
    for (int index = 0; index < 32; index++) {
        ROW_OF[index] = index / 4;
        COLUMN_OF[index] = 2 * (index % 4) + (1 - ROW_OF[index] % 2); /* dark squares alternate sides */
    }
    for (int index = 0; index < 32; index++) {
        for (int direction = 0; direction < 4; direction++) {
            int row_step = directions[direction][0], column_step = directions[direction][1];
            int near = index_at(ROW_OF[index] + row_step, COLUMN_OF[index] + column_step);
            int far = index_at(ROW_OF[index] + 2 * row_step, COLUMN_OF[index] + 2 * column_step);
            if (near < 0) {
                continue;
            }
            int offset = near - index; /* a step: 3, 4 or 5 either way, by the row's parity */
            STEP_SOURCES[row_step > 0 ? 0 : 1][abs(offset) - 3] |= 1U << index;
            if (far < 0) {
                continue;
            }
            Jump jump = {1U << near, 1U << far, far, row_step};
            JUMPS[index][JUMP_COUNTS[index]++] = jump;
            int jump_offset = far - index; /* 7 or 9 either way */
            int source = jump_offset == 7 ? 0 : jump_offset == 9 ? 1 : jump_offset == -7 ? 2 : 3;
            JUMP_SOURCES[source] |= 1U << index;
        }
    }
    return 0;
}

/* games.checkers.jumpers: the pieces that can capture. For each jump direction a piece can jump if the
 * square two steps on is empty and the one between holds an opponent: both are whole-board shifts back
 * onto the piece. A jump changes the bit index by 7 or 9 from any row, but the square between lies 3,
 * 4 or 5 away depending on the row's parity, hence the two halves of each test. */
static uint32_t jumpers(uint32_t down_movers, uint32_t up_movers, uint32_t opponents, uint32_t empty)
{
    uint32_t found = 0;
    if (down_movers) { /* towards higher numbers: left is +7 to land, right +9 */
        uint32_t over_left = ((opponents >> 4) & EVEN_ROWS) | ((opponents >> 3) & ODD_ROWS);
        uint32_t over_right = ((opponents >> 5) & EVEN_ROWS) | ((opponents >> 4) & ODD_ROWS);
        uint32_t jump_left = JUMP_SOURCES[0] & (empty >> 7) & over_left;
        uint32_t jump_right = JUMP_SOURCES[1] & (empty >> 9) & over_right;
        found |= down_movers & (jump_left | jump_right);
    }
    if (up_movers) { /* towards lower numbers: right is -7 to land, left -9 */
        uint32_t over_right = ((opponents << 3) & EVEN_ROWS) | ((opponents << 4) & ODD_ROWS);
        uint32_t over_left = ((opponents << 4) & EVEN_ROWS) | ((opponents << 5) & ODD_ROWS);
        uint32_t jump_right = JUMP_SOURCES[2] & (empty << 7) & over_right;
        uint32_t jump_left = JUMP_SOURCES[3] & (empty << 9) & over_left;
        found |= up_movers & (jump_right | jump_left);
    }
    return found;
}

/* What the side to move needs to generate its moves: which pieces go which way, and the board. */
typedef struct {
    uint32_t down, up; /* pieces that may move towards higher numbers, and towards lower (kings: both) */
    uint32_t opponents, empty;
} Movers;

static Movers movers_of(const Position *position)
{
    int turn = position->turn;
    uint32_t men = position->men[turn], kings = position->kings[turn];
    Movers movers;
    movers.opponents = position->men[1 - turn] | position->kings[1 - turn];
    movers.empty = ~(men | kings | movers.opponents);
    movers.down = turn == 0 ? men | kings : kings;
    movers.up = turn == 0 ? kings : men | kings;
    return movers;
}

static uint32_t step_targets(const Movers *movers, int towards_lower, int shift_index)
{
    int shift = 3 + shift_index;
    if (towards_lower) {
        return ((movers->up & STEP_SOURCES[1][shift_index]) >> shift) & movers->empty;
    }
    return ((movers->down & STEP_SOURCES[0][shift_index]) << shift) & movers->empty;
}

static int has_move(const Position *position)
{
    Movers movers = movers_of(position);
    if (jumpers(movers.down, movers.up, movers.opponents, movers.empty)) {
        return 1;
    }
    for (int shift_index = 0; shift_index < 3; shift_index++) {
        if (step_targets(&movers, 0, shift_index) || step_targets(&movers, 1, shift_index)) {
            return 1;
        }
    }
    return 0;
}

static Key key_of(const Position *position)
{
    Key key;
    key.men = position->men[0] | (uint64_t)position->men[1] << 32;
    key.kings = position->kings[0] | (uint64_t)position->kings[1] << 32;
    key.turn = position->turn;
    return key;
}

static int same_key(const Key *first, const Key *second)
{
    return first->men == second->men && first->kings == second->kings && first->turn == second->turn;
}

/* Checkers._draw_reason is not None: 80 quiet plies, or the third occurrence of the position. */
static int is_drawn(const Position *position)
{
    if (position->quiet_plies < REPETITION_MIN_QUIET) {
        return 0;
    }
    if (position->quiet_plies >= QUIET_PLY_LIMIT) {
        return 1;
    }
    Key key = key_of(position);
    int seen = 0;
    for (int index = 0; index < position->earlier_count; index++) {
        seen += same_key(&position->earlier[index], &key);
    }
    return seen >= 2;
}

/* Collects capture paths into moves, as games.checkers._extend_captures does, in its order. */
typedef struct {
    Move *moves;
    int count;
    int overflow;
    int king;
    int forward;        /* a man's row direction */
    uint32_t crown_row; /* where a man's capture ends; 0 for a king */
} Captures;

static void add_move(Captures *captures, const Move *move)
{
    if (captures->count < MAX_MOVES) {
        captures->moves[captures->count++] = *move;
    } else {
        captures->overflow = 1;
    }
}

/* Every completed jump sequence that continues path from the bit index. A jumped piece leaves opponents
 * at once, so it cannot be jumped twice; it does not join empty, as landings (one parity of rows) and
 * jumped squares (the other) never meet. */
static void extend_captures(Captures *captures, int index, const Move *path, uint32_t opponents,
                            uint32_t empty)
{
    int extended = 0;
    for (int number = 0; number < JUMP_COUNTS[index]; number++) {
        const Jump *jump = &JUMPS[index][number];
        if ((!captures->king && jump->row_step != captures->forward) || !(jump->jumped & opponents)
            || !(jump->landing & empty)) {
            continue;
        }
        extended = 1;
        if (path->length == MAX_PATH) {
            captures->overflow = 1;
            return;
        }
        Move longer = *path;
        longer.squares[longer.length++] = (uint8_t)(jump->landing_index + 1);
        longer.captured |= jump->jumped;
        if (jump->landing & captures->crown_row) {
            add_move(captures, &longer); /* crowned: the move ends there */
        } else {
            extend_captures(captures, jump->landing_index, &longer, opponents ^ jump->jumped, empty);
        }
    }
    if (!extended) {
        add_move(captures, path);
    }
}

static int generate_moves(Position *position, Move *moves)
{
    if (is_drawn(position)) {
        return 0;
    }
    Movers movers = movers_of(position);
    int turn = position->turn;
    uint32_t capturing = jumpers(movers.down, movers.up, movers.opponents, movers.empty);
    if (capturing) {
        Captures captures = {moves, 0, 0, 0, FORWARD[turn], 0};
        for (; capturing; capturing &= capturing - 1) { /* clears the lowest bit: pieces in square order */
            int index = lowest_bit(capturing);
            uint32_t origin = 1U << index;
            Move start = {{(uint8_t)(index + 1)}, 1, 0};
            captures.king = (position->kings[turn] & origin) != 0;
            captures.crown_row = captures.king ? 0 : CROWN_ROW[turn];
            /* The piece leaves its square: a king's jumps may pass through or end on it. */
            extend_captures(&captures, index, &start, movers.opponents, movers.empty | origin);
        }
        return captures.overflow ? -1 : captures.count;
    }
    int count = 0;
    for (int towards_lower = 0; towards_lower < 2; towards_lower++) {
        for (int shift_index = 0; shift_index < 3; shift_index++) {
            int offset = towards_lower ? -(3 + shift_index) : 3 + shift_index;
            uint32_t targets = step_targets(&movers, towards_lower, shift_index);
            for (; targets; targets &= targets - 1) { /* clears the lowest bit: targets in square order */
                int target = lowest_bit(targets);
                Move step = {{(uint8_t)(target - offset + 1), (uint8_t)(target + 1)}, 2, 0};
                moves[count++] = step; /* at most 4 a piece: 48 */
            }
        }
    }
    return count;
}

static void play(const Position *position, const Move *move, Position *child)
{
    int turn = position->turn;
    uint32_t origin = SQUARE(move->squares[0]), target = SQUARE(move->squares[move->length - 1]);
    uint32_t men = position->men[turn], kings = position->kings[turn];
    int king = (kings & origin) != 0;
    *child = *position;
    child->turn = 1 - turn;
    child->quiet_plies = 0; /* a capture or a man's move cannot be undone: the draw rules start over */
    child->earlier = position->earlier + position->earlier_count + 1;
    child->earlier_count = 0;
    if (move->captured) {
        if (king) {
            kings = (kings ^ origin) | target; /* a king's jumps may end where they started */
        } else if (target & CROWN_ROW[turn]) {
            men ^= origin;
            kings |= target;
        } else {
            men ^= origin | target;
        }
        child->men[1 - turn] &= ~move->captured;
        child->kings[1 - turn] &= ~move->captured;
    } else if (king) { /* a king's step counts towards the draw rules, and remembers where it was */
        kings ^= origin | target;
        child->quiet_plies = position->quiet_plies + 1;
        child->earlier = position->earlier;
        child->earlier_count = position->earlier_count + 1;
        position->earlier[position->earlier_count] = key_of(position);
    } else {
        men ^= origin | target;
        if (target & CROWN_ROW[turn]) {
            men ^= target;
            kings |= target;
        }
    }
    child->men[turn] = men;
    child->kings[turn] = kings;
}

static int side_to_move(const Position *position)
{
    return position->turn;
}

/* Checkers.outcome is not None: no legal move (a loss), or a draw rule. */
static int is_over(Position *position)
{
    return !has_move(position) || is_drawn(position);
}

/* A side with no legal move has lost, even when the same ply also completes a draw rule. */
static int final_score(Position *position, int ply)
{
    return has_move(position) ? 0 : ply - WIN;
}

/* bots.evaluation.checkers._advancement: every man's rows from its back row, as six popcounts of the
 * squares at least k rows ahead, k = 1 to 6. */
static int advancement(uint32_t men, int seat)
{
    int total = 0;
    for (int rows = 1; rows <= 6; rows++) {
        /* Black's rows k to 7, White's 0 to 7 - k: four bits a row, shifted off the far side. */
        uint32_t ahead = seat == 0 ? ~0U << 4 * rows : ~0U >> 4 * rows;
        total += popcount(men & ahead);
    }
    return total;
}

static int material(const Position *position, int seat)
{
    return MAN_VALUE * popcount(position->men[seat]) + KING_VALUE * popcount(position->kings[seat]);
}

/* bots.evaluation.checkers._placement: advancement, guard of the back row, and the centre. */
static int placement(const Position *position, int seat)
{
    uint32_t men = position->men[seat], kings = position->kings[seat];
    int score = ADVANCE_WEIGHT * advancement(men, seat);
    if (position->men[1 - seat]) {
        score += BACK_ROW_WEIGHT * popcount(men & BACK_ROW[seat]);
    }
    return score + CENTRE_WEIGHT * popcount((men | kings) & CENTRE);
}

static int evaluate(Position *position)
{
    int me = position->turn, you = 1 - me;
    int balance = material(position, me) - material(position, you);
    int score = balance + placement(position, me) - placement(position, you);
    if (balance) {
        int pieces = popcount(position->men[0] | position->men[1] | position->kings[0] | position->kings[1]);
        int traded = TRADE_WEIGHT * (STARTING_PIECES - pieces);
        score += balance > 0 ? traded : -traded;
    }
    return score;
}

/* bots.evaluation.checkers.order_key: bigger captures first (kings count extra), then crowning moves,
 * then moves to the centre. */
static void order_keys(Position *position, const Move *moves, int count, int *keys)
{
    int turn = position->turn;
    for (int index = 0; index < count; index++) {
        const Move *move = &moves[index];
        uint32_t target = SQUARE(move->squares[move->length - 1]);
        int key = CAPTURE_ORDER * popcount(move->captured)
                  + KING_CAPTURE_ORDER * popcount(move->captured & position->kings[1 - turn]);
        if ((SQUARE(move->squares[0]) & position->men[turn]) && (target & CROWN_ROW[turn])) {
            key += CROWNING_ORDER;
        }
        keys[index] = key + (target & CENTRE ? CENTRE_ORDER : 0);
    }
}

/* hash(key) of the Python key men | kings << 64 | turn << 128: 2**128 is 2**6 modulo 2**61 - 1. */
static uint64_t key_hash(const Key *key)
{
    uint64_t hash = hash_reduce(key->men, key->kings) + ((uint64_t)key->turn << 6);
    return hash >= HASH_MODULUS ? hash - HASH_MODULUS : hash;
}

static int same_move(const Move *first, const Move *second)
{
    return first->length == second->length && !memcmp(first->squares, second->squares, first->length);
}

#include "checkers_history.h"

static long long perft(Position *position, int depth)
{
    if (depth == 0) {
        return 1;
    }
    Move moves[MAX_MOVES];
    int count = generate_moves(position, moves);
    if (depth == 1 || count < 0) {
        return count; /* bulk counting: the last ply is counted, not played */
    }
    long long total = 0;
    Position child;
    for (int index = 0; index < count; index++) {
        play(position, &moves[index], &child);
        long long below = perft(&child, depth - 1);
        if (below < 0) {
            return -1;
        }
        total += below;
    }
    return total;
}

static PyObject *move_to_python(const Move *move)
{
    PyObject *path = PyTuple_New(move->length);
    for (int index = 0; path != NULL && index < move->length; index++) {
        PyObject *square = PyLong_FromLong(move->squares[index]);
        if (square == NULL) {
            Py_CLEAR(path);
            break;
        }
        PyTuple_SET_ITEM(path, index, square);
    }
    return path;
}

/* One 129-bit Python key (men | kings << 64 | turn << 128) as a Key, or -1 with an exception. */
static int key_from_python(PyObject *number, Key *key)
{
    if (!PyLong_Check(number) || Py_SIZE(number) < 0) {
        PyErr_Format(PyExc_ValueError, "not a checkers key: %R", number);
        return -1;
    }
    PyObject *bits_per_half = PyLong_FromLong(64);
    PyObject *high = bits_per_half == NULL ? NULL : PyNumber_Rshift(number, bits_per_half);
    PyObject *turn = high == NULL ? NULL : PyNumber_Rshift(high, bits_per_half);
    int failed = turn == NULL;
    if (!failed) {
        key->men = PyLong_AsUnsignedLongLongMask(number); /* the low 64 bits */
        key->kings = PyLong_AsUnsignedLongLongMask(high);
        key->turn = (int)PyLong_AsLong(turn);
        failed = PyErr_Occurred() != NULL || key->turn < 0 || key->turn > 1;
    }
    Py_XDECREF(bits_per_half);
    Py_XDECREF(high);
    Py_XDECREF(turn);
    if (failed && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "not a checkers key: %R", number);
    }
    return failed ? -1 : 0;
}

/* bots/speedups.py's state of a Checkers position: (black men, white men, black kings, white kings,
 * turn, quiet plies, earlier keys). The stack of keys gets room for plies_ahead more plies. */
static int position_from_state(PyObject *state, Position *position, int plies_ahead)
{
    uint64_t boards[4];
    if (PyTuple_GET_SIZE(state) != 7 || !PyTuple_Check(PyTuple_GET_ITEM(state, 6))) {
        PyErr_Format(PyExc_ValueError,
                     "expected a checkers state (men, men, kings, kings, turn, quiet, keys), got %R", state);
        return -1;
    }
    for (int index = 0; index < 4; index++) {
        if (board_from_python(PyTuple_GET_ITEM(state, index), &boards[index]) < 0) {
            return -1;
        }
    }
    long turn = PyLong_AsLong(PyTuple_GET_ITEM(state, 4));
    long quiet = PyLong_AsLong(PyTuple_GET_ITEM(state, 5));
    PyObject *keys = PyTuple_GET_ITEM(state, 6);
    uint64_t all = boards[0] | boards[1] | boards[2] | boards[3];
    int pieces = popcount(boards[0]) + popcount(boards[1]) + popcount(boards[2]) + popcount(boards[3]);
    if (PyErr_Occurred() || (turn != 0 && turn != 1) || quiet < 0 || quiet > INT_MAX - plies_ahead
        || all >> 32 || popcount(all) != pieces) { /* off the board, or two pieces on a square */
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "not a checkers position: %R", state);
        }
        return -1;
    }
    for (int seat = 0; seat < 2; seat++) {
        position->men[seat] = (uint32_t)boards[seat];
        position->kings[seat] = (uint32_t)boards[2 + seat];
    }
    position->turn = (int)turn;
    position->quiet_plies = (int)quiet;
    Py_ssize_t count = PyTuple_GET_SIZE(keys);
    /* Each ply ahead takes one slot at most (see Position.earlier), and one to spare. */
    position->earlier = PyMem_Calloc((size_t)count + (size_t)plies_ahead + 2, sizeof(Key));
    position->earlier_count = (int)count;
    if (position->earlier == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t index = 0; index < count; index++) {
        if (key_from_python(PyTuple_GET_ITEM(keys, index), &position->earlier[index]) < 0) {
            PyMem_Free(position->earlier);
            return -1;
        }
    }
    return 0;
}

static void release_position(Position *position)
{
    PyMem_Free(position->earlier);
}

#include "negamax.h"
#include "searcher_type.h"
