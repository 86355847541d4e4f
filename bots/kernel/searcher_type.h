/* The Python face of one game's kernel: a type whose instances are searchers (bots/negamax.py's AlphaBeta
 * hands one a position at a time for each iteration of its deepening) and whose static methods give the
 * rules' and the evaluation's numbers for tests and benchmarks. Included by each game's file after
 * negamax.h; bots/speedups.py is its one user and says what each method is for.
 *
 * Besides what negamax.h asks for, a game defines:
 *   GAME_TYPE_NAME, GAME_ADD_FUNCTION    the type's dotted name, and the function module.c calls
 *   int  position_from_state(PyObject *state, Position *, int plies_ahead)   its state tuple, read
 *        (bots/speedups.py builds it); plies_ahead bounds how deep play() will go from it
 *   void release_position(Position *)    frees what position_from_state took
 *   PyObject *move_to_python(const Move *)    the move as the Python rules write it
 *   long long perft(Position *, int depth)    games.base.perft, or -1 if a position had too many moves
 *   int  history_init(History *);  void history_free(History *)
 *   int  game_init(void)                 fills the game's tables once, when the module is imported
 * and may define GAME_METHODS, more entries of the type's method table (Othello's exact endgame).
 */

static PyObject *too_many_moves_error(void)
{
    return PyErr_Format(PyExc_OverflowError,
                        "a position has more than %d legal moves: too many for the kernel", MAX_MOVES);
}

/* A position read from state, or -1 with an exception. */
static int read_state(PyObject *state, Position *position, int plies_ahead)
{
    if (!PyTuple_Check(state)) {
        PyErr_Format(PyExc_TypeError, "expected a state tuple, got %R", state);
        return -1;
    }
    return position_from_state(state, position, plies_ahead);
}

static PyObject *Searcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"size_log2", NULL};
    int size_log2;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i", keywords, &size_log2)) {
        return NULL;
    }
    if (size_log2 < 0 || size_log2 > 30) {
        return PyErr_Format(PyExc_ValueError, "size_log2 must be between 0 and 30, got %d", size_log2);
    }
    Searcher *searcher = (Searcher *)type->tp_alloc(type, 0); /* zeroed: no killers, counters at 0 */
    if (searcher == NULL) {
        return NULL;
    }
    searcher->slot_mask = (1ULL << size_log2) - 1;
    searcher->slots = PyMem_Calloc((size_t)searcher->slot_mask + 1, sizeof(Entry));
    if (searcher->slots == NULL || history_init(&searcher->history) < 0) {
        Py_DECREF(searcher);
        return PyErr_NoMemory();
    }
    return (PyObject *)searcher;
}

static void Searcher_dealloc(Searcher *searcher)
{
    PyMem_Free(searcher->slots);
    history_free(&searcher->history);
    Py_TYPE(searcher)->tp_free((PyObject *)searcher);
}

static PyObject *Searcher_search_root(Searcher *searcher, PyObject *args)
{
    PyObject *state, *deadline;
    int depth, exact, ties = 0;
    if (!PyArg_ParseTuple(args, "OipO|p", &state, &depth, &exact, &deadline, &ties)) {
        return NULL;
    }
    if (depth < 1 || depth > MAX_DEPTH) {
        return PyErr_Format(PyExc_ValueError, "search depth must be between 1 and %d, got %d", MAX_DEPTH,
                            depth);
    }
    Position root;
    if (read_state(state, &root, depth + 1) < 0) {
        return NULL;
    }
    searcher->deadline = deadline == Py_None ? NULL : deadline;
    searcher->failed = 0;
    PyObject *lines = search_root(searcher, &root, depth, exact, ties);
    searcher->deadline = NULL;
    release_position(&root);
    return lines;
}

static PyObject *Searcher_table_move(Searcher *searcher, PyObject *state)
{
    Position position;
    if (read_state(state, &position, 0) < 0) {
        return NULL;
    }
    Key key = key_of(&position);
    release_position(&position);
    Entry *entry = table_get(searcher, &key);
    if (entry == NULL) {
        Py_RETURN_NONE;
    }
    return move_to_python(&entry->move);
}

static PyObject *Searcher_forget_ordering(Searcher *searcher, PyObject *Py_UNUSED(ignored))
{
    forget_ordering(searcher);
    Py_RETURN_NONE;
}

static PyObject *Searcher_perft(PyObject *Py_UNUSED(type), PyObject *args)
{
    PyObject *state;
    int depth;
    if (!PyArg_ParseTuple(args, "Oi", &state, &depth)) {
        return NULL;
    }
    if (depth < 0) {
        return PyErr_Format(PyExc_ValueError, "perft depth must be at least 0, got %d", depth);
    }
    Position position;
    if (read_state(state, &position, depth) < 0) {
        return NULL;
    }
    long long count;
    Py_BEGIN_ALLOW_THREADS
    count = perft(&position, depth);
    Py_END_ALLOW_THREADS
    release_position(&position);
    return count < 0 ? too_many_moves_error() : PyLong_FromLongLong(count);
}

static PyObject *Searcher_evaluate(PyObject *Py_UNUSED(type), PyObject *state)
{
    Position position;
    if (read_state(state, &position, 0) < 0) {
        return NULL;
    }
    int score = evaluate(&position);
    release_position(&position);
    return PyLong_FromLong(score);
}

/* The legal moves and each one's order_key, as a list of (move, key) pairs in generation order. */
static PyObject *Searcher_order_keys(PyObject *Py_UNUSED(type), PyObject *state)
{
    Position position;
    if (read_state(state, &position, 1) < 0) {
        return NULL;
    }
    Move moves[MAX_MOVES];
    int keys[MAX_MOVES];
    memset(moves, 0, sizeof(moves));
    int count = generate_moves(&position, moves);
    if (count < 0) {
        release_position(&position);
        return too_many_moves_error();
    }
    order_keys(&position, moves, count, keys);
    release_position(&position);
    PyObject *pairs = PyList_New(count);
    for (int index = 0; pairs != NULL && index < count; index++) {
        PyObject *move = move_to_python(&moves[index]);
        PyObject *pair = move == NULL ? NULL : Py_BuildValue("(Ni)", move, keys[index]);
        if (pair == NULL) {
            Py_CLEAR(pairs);
            break;
        }
        PyList_SET_ITEM(pairs, index, pair);
    }
    return pairs;
}

static PyObject *Searcher_key_hash(PyObject *Py_UNUSED(type), PyObject *state)
{
    Position position;
    if (read_state(state, &position, 0) < 0) {
        return NULL;
    }
    Key key = key_of(&position);
    release_position(&position);
    return PyLong_FromUnsignedLongLong(key_hash(&key));
}

static PyMethodDef Searcher_methods[] = {
    {"search_root", (PyCFunction)Searcher_search_root, METH_VARARGS,
     "search_root(state, depth, exact, deadline, ties=False) -> [(move, score, pv), ...]: one iteration "
     "of AlphaBeta's deepening from the root, best first; every move if exact, else every move that ties "
     "for the best if ties, else the best alone."},
    {"table_move", (PyCFunction)Searcher_table_move, METH_O,
     "table_move(state) -> the best move the table holds for the position, or None."},
    {"forget_ordering", (PyCFunction)Searcher_forget_ordering, METH_NOARGS,
     "Clear the killers and the history, as a new search's MoveOrderer starts."},
    {"perft", (PyCFunction)Searcher_perft, METH_VARARGS | METH_STATIC,
     "perft(state, depth) -> games.base.perft of the position."},
    {"evaluate", (PyCFunction)Searcher_evaluate, METH_O | METH_STATIC,
     "evaluate(state) -> the game's evaluation, as its bots/evaluation module's evaluate."},
    {"order_keys", (PyCFunction)Searcher_order_keys, METH_O | METH_STATIC,
     "order_keys(state) -> [(move, order_key), ...] for the legal moves, in legal_moves() order."},
    {"key_hash", (PyCFunction)Searcher_key_hash, METH_O | METH_STATIC,
     "key_hash(state) -> hash(position.key()) as the kernel computes it, modulo 2**64."},
#ifdef GAME_METHODS
    GAME_METHODS
#endif
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Searcher_members[] = {
    {"nodes", T_LONGLONG, offsetof(Searcher, nodes), 0, "Nodes visited, as AlphaBeta.nodes."},
    {"heuristic_leaves", T_LONGLONG, offsetof(Searcher, heuristic_leaves), 0,
     "Leaves scored by the evaluation, as AlphaBeta.heuristic_leaves."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject SearcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = GAME_TYPE_NAME,
    .tp_doc = "A compiled AlphaBeta for one game: Searcher(size_log2), with a table of 2**size_log2 slots.",
    .tp_basicsize = sizeof(Searcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Searcher_new,
    .tp_dealloc = (destructor)Searcher_dealloc,
    .tp_methods = Searcher_methods,
    .tp_members = Searcher_members,
};

int GAME_ADD_FUNCTION(PyObject *module)
{
    if (game_init() < 0 || PyType_Ready(&SearcherType) < 0) {
        return -1;
    }
    Py_INCREF(&SearcherType);
    if (PyModule_AddObject(module, strrchr(GAME_TYPE_NAME, '.') + 1, (PyObject *)&SearcherType) < 0) {
        Py_DECREF(&SearcherType);
        return -1;
    }
    return 0;
}
