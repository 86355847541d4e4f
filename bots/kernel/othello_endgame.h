/* Othello's exact endgame in C: bots/othello_endgame.py's search, with the same scores and best moves.
 *
 * Included by othello.c after its rules (legal_placements, flips). The score is the final disc difference
 * for the side to move; the search is negamax with alpha-beta, ordered fastest first far from the end and
 * by parity near it, as the Python reference is. The counts of nodes differ from the reference's: here
 * the last empty square is scored without a node for each side's try, and a transposition table keeps
 * each position's bounds where many empty squares are left. The Python side reaches it as the static
 * method Othello.solve_endgame(state, all_best, deadline), which GAME_METHODS adds to the type.
 */

#define ENDGAME_MAX_DIFFERENCE 64
#define ENDGAME_FASTEST_FIRST_EMPTIES 7
/* From this many empty squares up, a position's bounds are worth keeping (below, searching is cheaper). */
#define ENDGAME_TABLE_EMPTIES 9
#define ENDGAME_TABLE_SIZE_LOG2 18
/* The clock is read every ENDGAME_CHECK_MASK + 1 nodes, a few milliseconds' worth. */
#define ENDGAME_CHECK_MASK 16383
#define ENDGAME_NO_MOVE 255

/* searcher_type.h's, included after this file. */
static int read_state(PyObject *state, Position *position, int plies_ahead);

static const uint64_t QUADRANTS[4] = {
    0x000000000F0F0F0FULL, 0x00000000F0F0F0F0ULL, 0x0F0F0F0F00000000ULL, 0xF0F0F0F000000000ULL,
};

/* bots/othello_endgame.py's SQUARE_ORDER: every square by SQUARE_WEIGHTS, highest first, ties ascending. */
static uint8_t endgame_square_order[64];

typedef struct {
    uint64_t own, opponent;
    int8_t lower, upper; /* the difference lies within [lower, upper] */
    uint8_t move;        /* the best (or cutting) move found, tried first next time */
} EndgameEntry;

typedef struct {
    EndgameEntry *table;
    long long nodes;
    PyObject *deadline; /* a bots.deadline.Deadline, or NULL */
    int failed;         /* the deadline raised (OutOfTime), or a signal came: every node returns at once */
} Endgame;

static void endgame_init_order(void)
{
    for (int square = 0; square < 64; square++) {
        endgame_square_order[square] = (uint8_t)square;
    }
    for (int index = 1; index < 64; index++) { /* an insertion sort: stable, so ties stay ascending */
        uint8_t square = endgame_square_order[index];
        int place = index;
        while (place > 0 && SQUARE_WEIGHTS[endgame_square_order[place - 1]] < SQUARE_WEIGHTS[square]) {
            endgame_square_order[place] = endgame_square_order[place - 1];
            place--;
        }
        endgame_square_order[place] = square;
    }
}

static int endgame_still_searching(Endgame *endgame)
{
    if (PyErr_CheckSignals() < 0) {
        endgame->failed = 1;
        return 0;
    }
    if (endgame->deadline != NULL) {
        PyObject *checked = PyObject_CallMethod(endgame->deadline, "check", NULL);
        if (checked == NULL) {
            endgame->failed = 1;
            return 0;
        }
        Py_DECREF(checked);
    }
    return 1;
}

/* The placements of own in search order, into squares; their count. A move sorts by the opponent's
 * replies after it (fastest first) or by whether its quadrant has an odd number of empty squares
 * (parity), ties in endgame_square_order; a table move, if legal, goes first. */
static int endgame_order(uint64_t own, uint64_t opponent, uint64_t placements, int table_move,
                         uint8_t *squares)
{
    uint64_t empty = ~(own | opponent);
    int fastest_first = popcount(empty) >= ENDGAME_FASTEST_FIRST_EMPTIES;
    uint64_t odd = 0;
    for (int quadrant = 0; quadrant < 4; quadrant++) {
        if (popcount(empty & QUADRANTS[quadrant]) & 1) {
            odd |= QUADRANTS[quadrant];
        }
    }
    int keys[64];
    int count = 0;
    for (int rank = 0; rank < 64 && placements; rank++) {
        int square = endgame_square_order[rank];
        if (!(placements >> square & 1)) {
            continue;
        }
        placements &= ~(1ULL << square);
        int key;
        if (fastest_first) {
            uint64_t flipped = flips(own, opponent, square);
            key = popcount(legal_placements(opponent ^ flipped, own | flipped | 1ULL << square));
        } else {
            key = !(odd >> square & 1);
        }
        int place = count++;
        while (place > 0 && keys[place - 1] > key) {
            keys[place] = keys[place - 1];
            squares[place] = squares[place - 1];
            place--;
        }
        keys[place] = key;
        squares[place] = (uint8_t)square;
    }
    for (int index = 0; table_move != ENDGAME_NO_MOVE && index < count; index++) {
        if (squares[index] == table_move) {
            memmove(&squares[1], &squares[0], (size_t)index);
            squares[0] = (uint8_t)table_move;
            break;
        }
    }
    return count;
}

/* The final difference when one empty square is left: the side to move plays it if that flips
 * something, else the opponent does if it can, else the game ends with the square empty. */
static int endgame_last_square(uint64_t own, uint64_t opponent, int square)
{
    int difference = popcount(own) - popcount(opponent);
    int flipped = popcount(flips(own, opponent, square));
    if (flipped) {
        return difference + 2 * flipped + 1;
    }
    flipped = popcount(flips(opponent, own, square));
    return flipped ? difference - 2 * flipped - 1 : difference;
}

static EndgameEntry *endgame_slot(Endgame *endgame, uint64_t own, uint64_t opponent)
{
    uint64_t mixed = (own * 0x9E3779B97F4A7C15ULL) ^ (opponent * 0xC2B2AE3D27D4EB4FULL);
    return &endgame->table[(mixed ^ mixed >> 29) & ((1ULL << ENDGAME_TABLE_SIZE_LOG2) - 1)];
}

static int endgame_negamax(Endgame *endgame, uint64_t own, uint64_t opponent, int alpha, int beta);

static int endgame_child(Endgame *endgame, uint64_t own, uint64_t opponent, int square, int alpha, int beta)
{
    uint64_t flipped = flips(own, opponent, square);
    return endgame_negamax(endgame, opponent ^ flipped, own | flipped | 1ULL << square, alpha, beta);
}

/* bots.othello_endgame._Solver.negamax: the final difference for the side with own to move, exact within
 * (alpha, beta), fail-soft beyond it. */
static int endgame_negamax(Endgame *endgame, uint64_t own, uint64_t opponent, int alpha, int beta)
{
    endgame->nodes++;
    if (!(endgame->nodes & ENDGAME_CHECK_MASK) && !endgame_still_searching(endgame)) {
        return 0;
    }
    uint64_t empty = ~(own | opponent);
    int empties = popcount(empty);
    if (empties == 1) {
        return endgame_last_square(own, opponent, lowest_bit(empty));
    }
    uint64_t placements = legal_placements(own, opponent);
    if (!placements) {
        if (!legal_placements(opponent, own)) {
            return popcount(own) - popcount(opponent);
        }
        return -endgame_negamax(endgame, opponent, own, -beta, -alpha); /* a pass */
    }
    EndgameEntry *entry = NULL;
    int table_move = ENDGAME_NO_MOVE;
    if (empties >= ENDGAME_TABLE_EMPTIES) {
        entry = endgame_slot(endgame, own, opponent);
        if (entry->own == own && entry->opponent == opponent) {
            if (entry->lower >= beta || entry->lower == entry->upper) {
                return entry->lower;
            }
            if (entry->upper <= alpha) {
                return entry->upper;
            }
            table_move = entry->move;
        }
    }
    uint8_t squares[64];
    int count = endgame_order(own, opponent, placements, table_move, squares);
    int alpha_original = alpha;
    int best = -ENDGAME_MAX_DIFFERENCE - 1;
    int best_move = squares[0];
    for (int index = 0; index < count; index++) {
        int score = -endgame_child(endgame, own, opponent, squares[index], -beta, -alpha);
        if (endgame->failed) {
            return 0;
        }
        if (score > best) {
            best = score;
            best_move = squares[index];
            if (score > alpha) {
                alpha = score;
                if (alpha >= beta) {
                    break;
                }
            }
        }
    }
    if (entry != NULL) {
        if (entry->own != own || entry->opponent != opponent) {
            entry->own = own;
            entry->opponent = opponent;
            entry->lower = -ENDGAME_MAX_DIFFERENCE;
            entry->upper = ENDGAME_MAX_DIFFERENCE;
        }
        if (best > alpha_original) { /* exact or above the window: at least best */
            entry->lower = (int8_t)(best > entry->lower ? best : entry->lower);
        }
        if (best < beta) { /* exact or below the window: at most best */
            entry->upper = (int8_t)(best < entry->upper ? best : entry->upper);
        }
        entry->move = (uint8_t)best_move;
    }
    return best;
}

/* bots.othello_endgame._Solver.solve_root: the best difference with a full window, then each move after
 * the best one tested with a null window at it. Fills moves with the best moves, ascending; their count,
 * or -1 if the search failed. */
static int endgame_root(Endgame *endgame, uint64_t own, uint64_t opponent, int all_best, int *difference,
                        uint8_t *moves)
{
    int full = ENDGAME_MAX_DIFFERENCE + 1;
    endgame->nodes++;
    uint64_t placements = legal_placements(own, opponent);
    if (!placements) {
        *difference = -endgame_negamax(endgame, opponent, own, -full, full);
        moves[0] = PASS;
        return endgame->failed ? -1 : 1;
    }
    uint8_t squares[64];
    int count = endgame_order(own, opponent, placements, ENDGAME_NO_MOVE, squares);
    int best = -full, best_index = 0, alpha = -full;
    for (int index = 0; index < count; index++) {
        int score = -endgame_child(endgame, own, opponent, squares[index], -full, -alpha);
        if (endgame->failed) {
            return -1;
        }
        if (score > best) {
            best = score;
            best_index = index;
            alpha = score > alpha ? score : alpha;
        }
    }
    int found = 0;
    moves[found++] = squares[best_index];
    for (int index = best_index + 1; all_best && index < count; index++) {
        int score = -endgame_child(endgame, own, opponent, squares[index], -best, -best + 1);
        if (endgame->failed) {
            return -1;
        }
        if (score >= best) {
            moves[found++] = squares[index];
        }
    }
    for (int index = 1; index < found; index++) { /* ascending, as the reference gives them */
        uint8_t move = moves[index];
        int place = index;
        while (place > 0 && moves[place - 1] > move) {
            moves[place] = moves[place - 1];
            place--;
        }
        moves[place] = move;
    }
    *difference = best;
    return found;
}

static PyObject *Othello_solve_endgame(PyObject *Py_UNUSED(type), PyObject *args)
{
    PyObject *state, *deadline;
    int all_best;
    if (!PyArg_ParseTuple(args, "OpO", &state, &all_best, &deadline)) {
        return NULL;
    }
    Position position;
    if (read_state(state, &position, 0) < 0) {
        return NULL;
    }
    if (is_over(&position)) {
        return PyErr_Format(PyExc_ValueError, "no move to solve: the game is over in %R", state);
    }
    Endgame endgame = {.nodes = 0, .deadline = deadline == Py_None ? NULL : deadline, .failed = 0};
    endgame.table = PyMem_Calloc((size_t)1 << ENDGAME_TABLE_SIZE_LOG2, sizeof(EndgameEntry));
    if (endgame.table == NULL) {
        return PyErr_NoMemory();
    }
    uint8_t moves[64];
    int difference = 0;
    int found = endgame_root(&endgame, position.own, position.opponent, all_best, &difference, moves);
    PyMem_Free(endgame.table);
    if (found < 0) {
        return NULL;
    }
    PyObject *best_moves = PyList_New(found);
    for (int index = 0; best_moves != NULL && index < found; index++) {
        PyObject *move = PyLong_FromLong(moves[index]);
        if (move == NULL) {
            Py_CLEAR(best_moves);
            break;
        }
        PyList_SET_ITEM(best_moves, index, move);
    }
    return best_moves == NULL ? NULL : Py_BuildValue("(iNL)", difference, best_moves, endgame.nodes);
}

#define GAME_METHODS                                                                                     \
    {"solve_endgame", (PyCFunction)Othello_solve_endgame, METH_VARARGS | METH_STATIC,                    \
     "solve_endgame(state, all_best, deadline) -> (difference, best moves, nodes): "                      \
     "bots.othello_endgame.solve, compiled."},
