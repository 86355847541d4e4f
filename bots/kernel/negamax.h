/* bots/negamax.py's alpha-beta in C, for one game: each game's file defines its rules, then includes this.
 *
 * The Python search is the reference, and this one is it, step for step: the same node counted at the
 * same moment, the same transposition table (same slots, always replace, reuse only at the same depth or
 * when resolved), the same move ordering (bots/ordering.py: the table's move, two killers a ply, then
 * history and the game's order_key, sorted stably and only once the early moves are searched). So for a
 * position and a depth both return the same score, the same move, the same principal variation and the
 * same node count; tests/test_kernel.py hold them to it.
 *
 * The formulation is the seed's: a score is always from the side to move, a child's score is negated on
 * return, and a node stops searching its moves once alpha >= beta.
 *
 * A game defines, before including this file:
 *   types     Position (copied to make a move: a few words), Move, Key (what position.key() tells
 *             apart), History (bots/ordering.py's history table: a number per side and move)
 *   MAX_MOVES the most legal moves a position can have
 *   int  generate_moves(Position *, Move moves[MAX_MOVES])  position.legal_moves(), same order; 0 if over,
 *             -1 if there are more than MAX_MOVES (a made-up checkers position could; the search raises)
 *   void play(const Position *, const Move *, Position *child)                  a legal move's position
 *   int  is_over(Position *)                                        position.outcome() is not None
 *   int  final_score(Position *, int ply)  outcome_score(position.outcome(), position.turn, ply)
 *   int  evaluate(Position *)                               the game's bots/evaluation module's evaluate
 *   void order_keys(Position *, const Move *moves, int count, int keys[])  its order_key of each move
 *   int  side_to_move(const Position *)                                      position.turn
 *   Key  key_of(const Position *);  int same_key(const Key *, const Key *)
 *   uint64_t key_hash(const Key *)                                  hash(position.key()), as unsigned
 *   int  same_move(const Move *, const Move *)
 *   int64_t *history_slot(History *, int side, const Move *)   the move's count; never NULL (0 if new)
 *   void history_clear(History *)
 */

typedef struct {
    Key key;
    Move move;
    int32_t score;
    int16_t depth;
    uint8_t bound;
    uint8_t resolved; /* every line below reached the end of the game: the score holds at any depth */
    uint8_t used;
} Entry;

typedef struct {
    Move moves[2];
    uint8_t valid[2];
} Killers;

/* One search's state: the table (kept between searches, as AlphaBeta keeps its own), the ordering's
 * memory (cleared by each new search), the principal variation and the counters that the Python side
 * reads back. It is also the Python object (see searcher_type.h), hence the header. */
typedef struct {
    PyObject_HEAD
    Entry *slots;
    uint64_t slot_mask;
    Killers killers[MAX_PLY];
    History history;
    Move pv[MAX_PLY][MAX_PLY];
    int pv_length[MAX_PLY];
    long long nodes;
    long long heuristic_leaves;
    PyObject *deadline; /* a bots.deadline.Deadline to ask every 1024 nodes, or NULL */
    int failed;         /* the deadline raised (OutOfTime), or a signal did: every node returns at once */
} Searcher;

static Entry *table_slot(Searcher *searcher, const Key *key)
{
    return &searcher->slots[key_hash(key) & searcher->slot_mask];
}

/* The entry for key, or NULL if its slot holds nothing or another position. */
static Entry *table_get(Searcher *searcher, const Key *key)
{
    Entry *entry = table_slot(searcher, key);
    return entry->used && same_key(&entry->key, key) ? entry : NULL;
}

static void table_put(Searcher *searcher, const Key *key, int depth, int score, int bound, const Move *move,
                      int resolved)
{
    Entry *entry = table_slot(searcher, key);
    entry->key = *key;
    entry->move = *move;
    entry->score = score;
    entry->depth = (int16_t)depth;
    entry->bound = (uint8_t)bound;
    entry->resolved = (uint8_t)resolved;
    entry->used = 1;
}

/* Removes the first move equal to move from moves (keeping the others' order); whether it was there. */
static int take_move(Move *moves, int *count, const Move *move)
{
    for (int index = 0; index < *count; index++) {
        if (same_move(&moves[index], move)) {
            memmove(&moves[index], &moves[index + 1], (size_t)(*count - index - 1) * sizeof(Move));
            (*count)--;
            return 1;
        }
    }
    return 0;
}

/* The moves of one node in bots/ordering.py's order: the early candidates (the table's move, then the
 * killers of the ply) first, then the rest sorted by history and order_key. The sort waits until the
 * early candidates are searched, as the Python generator does: their subtrees change the history. */
typedef struct {
    Move early[3];
    int early_count;
    Move *rest;
    int rest_count;
    int handed_out;
    int sorted;
} MoveOrder;

static void order_start(MoveOrder *order, Searcher *searcher, Move *moves, int count, const Move *table_move,
                        int ply)
{
    order->early_count = 0;
    order->rest = moves;
    order->rest_count = count;
    order->handed_out = 0;
    order->sorted = 0;
    if (table_move != NULL && take_move(moves, &order->rest_count, table_move)) {
        order->early[order->early_count++] = *table_move;
    }
    Killers *killers = &searcher->killers[ply];
    for (int slot = 0; slot < 2; slot++) {
        if (killers->valid[slot] && take_move(moves, &order->rest_count, &killers->moves[slot])) {
            order->early[order->early_count++] = killers->moves[slot];
        }
    }
}

/* MoveOrderer.sort: most promising first by (history, order_key), ties in generation order. An insertion
 * sort, stable and quick on a few dozen moves; a move slides left only past a strictly smaller key. */
static void sort_moves(Searcher *searcher, Position *position, Move *moves, int count)
{
    if (count < 2) {
        return;
    }
    int keys[MAX_MOVES];
    int64_t history[MAX_MOVES];
    int side = side_to_move(position);
    order_keys(position, moves, count, keys);
    for (int index = 0; index < count; index++) {
        history[index] = *history_slot(&searcher->history, side, &moves[index]);
    }
    for (int index = 1; index < count; index++) {
        Move move = moves[index];
        int key = keys[index];
        int64_t earned = history[index];
        int place = index;
        while (place > 0
               && (history[place - 1] < earned || (history[place - 1] == earned && keys[place - 1] < key))) {
            moves[place] = moves[place - 1];
            keys[place] = keys[place - 1];
            history[place] = history[place - 1];
            place--;
        }
        moves[place] = move;
        keys[place] = key;
        history[place] = earned;
    }
}

/* The next move to search into *move, or 0 when every move has been handed out. */
static int order_next(MoveOrder *order, Searcher *searcher, Position *position, Move *move)
{
    if (order->handed_out < order->early_count) {
        *move = order->early[order->handed_out++];
        return 1;
    }
    if (!order->sorted) {
        sort_moves(searcher, position, order->rest, order->rest_count);
        order->sorted = 1;
    }
    int index = order->handed_out - order->early_count;
    if (index >= order->rest_count) {
        return 0;
    }
    *move = order->rest[index];
    order->handed_out++;
    return 1;
}

/* MoveOrderer.reward: move caused a cut-off at ply with depth plies left. */
static void reward(Searcher *searcher, int side, const Move *move, int depth, int ply)
{
    *history_slot(&searcher->history, side, move) += (int64_t)depth * depth;
    Killers *killers = &searcher->killers[ply];
    if (!(killers->valid[0] && same_move(&killers->moves[0], move))) {
        killers->moves[1] = killers->moves[0];
        killers->valid[1] = killers->valid[0];
        killers->moves[0] = *move;
        killers->valid[0] = 1;
    }
}

static void forget_ordering(Searcher *searcher)
{
    memset(searcher->killers, 0, sizeof(searcher->killers));
    history_clear(&searcher->history);
}

/* The line at ply becomes move followed by the line of the child just searched. */
static void extend_pv(Searcher *searcher, int ply, const Move *move)
{
    int child_length = searcher->pv_length[ply + 1];
    searcher->pv[ply][0] = *move;
    memcpy(&searcher->pv[ply][1], searcher->pv[ply + 1], (size_t)child_length * sizeof(Move));
    searcher->pv_length[ply] = child_length + 1;
}

/* Asked every CHECK_MASK + 1 nodes, where the Python search asks Deadline.check(): whether the search
 * goes on. A pending signal (Ctrl-C) stops it as it would stop the Python loop, then the deadline may;
 * either leaves its exception set. */
static int still_searching(Searcher *searcher)
{
    if (PyErr_CheckSignals() < 0) {
        searcher->failed = 1;
        return 0;
    }
    if (searcher->deadline == NULL) {
        return 1;
    }
    PyObject *checked = PyObject_CallMethod(searcher->deadline, "check", NULL);
    if (checked == NULL) {
        searcher->failed = 1;
        return 0;
    }
    Py_DECREF(checked);
    return 1;
}

/* A position with more moves than the kernel has room for: the search stops with OverflowError. */
static int too_many_moves(Searcher *searcher)
{
    PyErr_SetString(PyExc_OverflowError, "a position has more legal moves than the compiled kernel holds");
    searcher->failed = 1;
    return 0;
}

/* AlphaBeta._negamax: the score of position for its side to move, exact if it lies within (alpha, beta);
 * fail-soft, so below the window it is an upper bound and above it a lower bound. */
static int negamax(Searcher *searcher, Position *position, int depth, int alpha, int beta, int ply)
{
    searcher->nodes++;
    if (!(searcher->nodes & CHECK_MASK) && !still_searching(searcher)) {
        return 0;
    }
    searcher->pv_length[ply] = 0;
    if (depth <= 0) {
        if (is_over(position)) {
            return final_score(position, ply);
        }
        searcher->heuristic_leaves++;
        return evaluate(position);
    }

    /* The end of the game is decided before the table is asked (a checkers draw by repetition may be
     * stored as a position that was not over). */
    Move moves[MAX_MOVES];
    int count = generate_moves(position, moves);
    if (count <= 0) {
        return count == 0 ? final_score(position, ply) : too_many_moves(searcher);
    }

    Key key = key_of(position);
    Entry *entry = table_get(searcher, &key);
    Move table_move;
    int has_table_move = 0;
    if (entry != NULL) {
        if (entry->depth == depth || (entry->resolved && entry->depth <= depth)) {
            int score = from_table(entry->score, ply);
            if (entry->bound == EXACT || (entry->bound == LOWER ? score >= beta : score <= alpha)) {
                if (!entry->resolved) {
                    searcher->heuristic_leaves++;
                }
                return score;
            }
        }
        table_move = entry->move; /* a copy: the children may overwrite the slot */
        has_table_move = 1;
    }

    int alpha_original = alpha;
    int best_score = -INFINITE_SCORE;
    Move best_move = moves[0];
    long long leaves_before = searcher->heuristic_leaves;
    MoveOrder order;
    order_start(&order, searcher, moves, count, has_table_move ? &table_move : NULL, ply);
    Move move;
    Position child;
    while (order_next(&order, searcher, position, &move)) {
        play(position, &move, &child);
        int score = -negamax(searcher, &child, depth - 1, -beta, -alpha, ply + 1);
        if (searcher->failed) {
            return 0;
        }
        if (score > best_score) {
            best_score = score;
            best_move = move;
            if (score > alpha) {
                alpha = score;
                extend_pv(searcher, ply, &move);
                if (alpha >= beta) {
                    reward(searcher, side_to_move(position), &move, depth, ply);
                    break;
                }
            }
        }
    }

    int bound = best_score <= alpha_original ? UPPER : best_score >= beta ? LOWER : EXACT;
    int resolved = searcher->heuristic_leaves == leaves_before;
    table_put(searcher, &key, depth, to_table(best_score, ply), bound, &best_move, resolved);
    return best_score;
}

typedef struct {
    Move move;
    int score;
    PyObject *pv; /* a tuple of moves, the move first */
} RootLine;

static PyObject *move_to_python(const Move *move);

/* The tuple (move, *pv[1]): a root move followed by its child's principal variation. */
static PyObject *root_pv(Searcher *searcher, const Move *move)
{
    int child_length = searcher->pv_length[1];
    PyObject *line = PyTuple_New(child_length + 1);
    if (line == NULL) {
        return NULL;
    }
    for (int index = 0; index <= child_length; index++) {
        PyObject *item = move_to_python(index == 0 ? move : &searcher->pv[1][index - 1]);
        if (item == NULL) {
            Py_DECREF(line);
            return NULL;
        }
        PyTuple_SET_ITEM(line, index, item);
    }
    return line;
}

/* AlphaBeta._search_root: the root's moves searched to depth, every one exactly if exact, else every one
 * that ties for the best if ties (each move after the first searched one point below the best so far),
 * else the best. A list of (move, score, pv) tuples, best first (ties in search order); NULL with an
 * exception if the deadline raised or memory ran out. */
static PyObject *search_root(Searcher *searcher, Position *root, int depth, int exact, int ties)
{
    Move moves[MAX_MOVES];
    RootLine lines[MAX_MOVES];
    int line_count = 0;
    memset(lines, 0, sizeof(lines)); /* the first move always makes a line; this tells the compiler so */
    searcher->nodes++;
    int count = generate_moves(root, moves);
    if (count <= 0) {
        if (count == 0) {
            PyErr_SetString(PyExc_ValueError, "no move to search: the game is over");
        } else {
            too_many_moves(searcher);
        }
        return NULL;
    }
    Key key = key_of(root);
    Entry *entry = table_get(searcher, &key);
    Move table_move;
    if (entry != NULL) {
        table_move = entry->move;
    }
    MoveOrder order;
    order_start(&order, searcher, moves, count, entry != NULL ? &table_move : NULL, 0);
    Move ordered[MAX_MOVES];
    int ordered_count = 0;
    while (order_next(&order, searcher, root, &ordered[ordered_count])) {
        ordered_count++;
    }

    int alpha = -INFINITE_SCORE;
    long long leaves_before = searcher->heuristic_leaves;
    Position child;
    for (int index = 0; index < ordered_count; index++) {
        int window_alpha = exact ? -INFINITE_SCORE : ties && alpha > -INFINITE_SCORE ? alpha - 1 : alpha;
        play(root, &ordered[index], &child);
        int score = -negamax(searcher, &child, depth - 1, -INFINITE_SCORE, -window_alpha, 1);
        if (searcher->failed) {
            goto failed;
        }
        if (exact || score > window_alpha) {
            RootLine *line = &lines[line_count];
            line->move = ordered[index];
            line->score = score;
            line->pv = root_pv(searcher, &ordered[index]);
            if (line->pv == NULL) {
                goto failed;
            }
            line_count++;
        }
        if (score > alpha) {
            alpha = score;
        }
    }

    /* Best first, ties in search order: an insertion sort moves a line only past strictly lower scores. */
    for (int index = 1; index < line_count; index++) {
        RootLine line = lines[index];
        int place = index;
        while (place > 0 && lines[place - 1].score < line.score) {
            lines[place] = lines[place - 1];
            place--;
        }
        lines[place] = line;
    }
    int resolved = searcher->heuristic_leaves == leaves_before;
    table_put(searcher, &key, depth, lines[0].score, EXACT, &lines[0].move, resolved);

    int kept = exact ? line_count : 1;
    while (!exact && ties && kept < line_count && lines[kept].score == lines[0].score) {
        kept++;
    }
    for (int index = kept; index < line_count; index++) {
        Py_CLEAR(lines[index].pv);
    }
    line_count = kept;
    PyObject *result = PyList_New(kept);
    if (result == NULL) {
        goto failed;
    }
    for (int index = 0; index < kept; index++) {
        PyObject *item = PyTuple_New(3);
        PyObject *move = item == NULL ? NULL : move_to_python(&lines[index].move);
        PyObject *score = move == NULL ? NULL : PyLong_FromLong(lines[index].score);
        if (score == NULL) {
            Py_XDECREF(move);
            Py_XDECREF(item);
            Py_DECREF(result);
            goto failed;
        }
        PyTuple_SET_ITEM(item, 0, move);
        PyTuple_SET_ITEM(item, 1, score);
        PyTuple_SET_ITEM(item, 2, lines[index].pv); /* the tuple takes the line's reference */
        lines[index].pv = NULL;
        PyList_SET_ITEM(result, index, item);
    }
    return result;

failed:
    for (int index = 0; index < line_count; index++) {
        Py_XDECREF(lines[index].pv);
    }
    return NULL;
}
