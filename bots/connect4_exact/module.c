/*
 * The exact Connect Four solver's search, compiled: the twin of bots/connect4_exact_search.py, built as
 * the optional extension bots._connect4_exact_search.
 *
 * The Python search is the reference: this extension does what it does, step for step, so that both
 * give the same scores, the same moves and, while no bound is lost from the transposition table, the
 * same node counts (tests/test_connect4_exact_search.py holds them to it). Read the Python module first:
 * its docstrings say why each step is there. bots/connect4_solver.py chooses between the two. `pip
 * install` builds this one where a C compiler is found (setup.py); the Python search runs wherever it is
 * not, or when PLYARENA_NO_SPEEDUPS=1.
 *
 * Scores follow Pascal Pons' convention, from the side to move: a win scores 22 minus the winner's
 * stones when the game ends, a loss the negative of the opponent's win, a draw 0. The search is negamax
 * with alpha-beta pruning, after Pons' "Solving Connect 4" (his code is AGPL; this is our own writing of
 * the published ideas): a score is from the side to move, a child's is negated on return, and a search
 * stops at alpha >= beta.
 *
 * The files: bitboard.h (the board's bits and the score bounds), table.h (the transposition table),
 * search.h (negamax and the searches around it), and this one, the Python type `Search` around them.
 *
 * A search keeps the GIL: the bots run it in a process pool, one search at a time per process, and a
 * search that let the GIL go would share its table with whichever thread came next. It looks at pending
 * signals every 2^20 nodes, so that Ctrl-C stops even a search of hours.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>

#include "bitboard.h"
#include "search.h"
#include "table.h"

/* One spare table of the default size, kept when a search ends so that the next one (a solve per
   position, as bots.perfect and the benchmark do) takes it over instead of allocating tens of megabytes
   again. A search that finds it taken allocates its own. */
static Table *spare_table = NULL;

#define DEFAULT_CAPACITY (UINT64_C(1) << 23)

/* Raise what a stopped search calls for: the solver module's SolverBudgetExceeded over budget (imported
   here, when needed, since that module imports this one), or the pending exception of a signal. */
static PyObject *
raise_stop(Search *search)
{
    if (search->stop == OVER_BUDGET) {
        PyObject *module = PyImport_ImportModule("bots.connect4_exact_search");
        if (module != NULL) {
            PyObject *error = PyObject_GetAttrString(module, "SolverBudgetExceeded");
            Py_DECREF(module);
            if (error != NULL) {
                PyObject *instance = PyObject_CallOneArg(error, search->max_nodes);
                if (instance != NULL) {
                    PyErr_SetObject(error, instance);
                    Py_DECREF(instance);
                }
                Py_DECREF(error);
            }
        }
    }
    search->stop = RUNNING; /* a later call meets the budget again at its first node */
    return NULL;
}

/* The bitboards of a ConnectFour position (any object with int attributes `current` and `mask`),
   checked: a search on an impossible board could loop or answer nonsense. */
static int
read_board(PyObject *position, Board *board)
{
    PyObject *current = PyObject_GetAttrString(position, "current");
    if (current == NULL)
        return -1;
    PyObject *mask = PyObject_GetAttrString(position, "mask");
    if (mask == NULL) {
        Py_DECREF(current);
        return -1;
    }
    board->current = PyLong_AsUnsignedLongLong(current);
    board->mask = PyLong_AsUnsignedLongLong(mask);
    Py_DECREF(current);
    Py_DECREF(mask);
    if (PyErr_Occurred())
        return -1;
    /* Gravity: adding the bottom row carries through a column's stones into the cell above them, so the
       sum meets the stones again only where a column has a hole below a stone. */
    if ((board->mask & ~BOARD) || (board->current & ~board->mask)
        || ((board->mask + BOTTOM) & board->mask)) {
        char message[96];
        snprintf(message, sizeof message, "not a Connect Four position: current %#llx, mask %#llx",
                 (unsigned long long)board->current, (unsigned long long)board->mask);
        PyErr_SetString(PyExc_ValueError, message);
        return -1;
    }
    board->ply = popcount(board->mask);
    return 0;
}

static PyObject *
Search_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"max_nodes", "table_capacity", NULL};
    PyObject *max_nodes = Py_None, *table_capacity = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:Search", keywords, &max_nodes, &table_capacity))
        return NULL;

    uint64_t node_limit = UINT64_MAX;
    if (max_nodes != Py_None) {
        long long limit = PyLong_AsLongLong(max_nodes);
        if (limit == -1 && PyErr_Occurred())
            return NULL;
        node_limit = limit < 0 ? 0 : (uint64_t)limit;
    }
    uint64_t capacity = DEFAULT_CAPACITY;
    if (table_capacity != Py_None) {
        long long requested = PyLong_AsLongLong(table_capacity);
        if (requested == -1 && PyErr_Occurred())
            return NULL;
        if (requested < 1) {
            PyErr_SetString(PyExc_ValueError, "table_capacity must be at least 1");
            return NULL;
        }
        capacity = (uint64_t)requested;
    }

    Search *search = (Search *)type->tp_alloc(type, 0);
    if (search == NULL)
        return NULL;
    int index_bits = index_bits_for(capacity);
    if (spare_table != NULL && spare_table->index_bits == index_bits) {
        search->table = spare_table;
        spare_table = NULL;
    }
    else if ((search->table = table_new(index_bits)) == NULL) {
        Py_DECREF(search);
        return NULL;
    }
    table_empty_for(search->table, capacity);
    search->node_limit = node_limit;
    search->next_check = node_limit < SIGNAL_INTERVAL ? node_limit : SIGNAL_INTERVAL;
    Py_INCREF(max_nodes);
    search->max_nodes = max_nodes;
    return (PyObject *)search;
}

static void
Search_dealloc(Search *search)
{
    if (search->table != NULL) {
        if (spare_table == NULL && search->table->index_bits == index_bits_for(DEFAULT_CAPACITY))
            spare_table = search->table;
        else
            table_free(search->table);
    }
    Py_XDECREF(search->max_nodes);
    Py_TYPE(search)->tp_free((PyObject *)search);
}

static PyObject *
Search_score(Search *search, PyObject *position)
{
    Board board;
    if (read_board(position, &board) < 0)
        return NULL;
    int score = exact_score(search, board);
    if (search->stop)
        return raise_stop(search);
    return PyLong_FromLong(score);
}

static PyObject *
Search_value(Search *search, PyObject *position)
{
    Board board;
    if (read_board(position, &board) < 0)
        return NULL;
    int decided = 1;
    if (!board_is_over(board))
        score_at_once(board, &decided);
    int value;
    if (decided) {
        int score = exact_score(search, board);
        value = (score > 0) - (score < 0);
    }
    else if (negamax(search, board.current, board.mask, board.ply, 0, 1) > 0) {
        value = 1;
    }
    else if (search->stop) {
        value = 0;
    }
    else {
        value = negamax(search, board.current, board.mask, board.ply, -1, 0) >= 0 ? 0 : -1;
    }
    if (search->stop)
        return raise_stop(search);
    return PyLong_FromLong(value);
}

static PyObject *
Search_best_move(Search *search, PyObject *const *args, Py_ssize_t nargs)
{
    Board board;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "best_move() takes a position and a score (%zd given)", nargs);
        return NULL;
    }
    if (read_board(args[0], &board) < 0)
        return NULL;
    long score = PyLong_AsLong(args[1]);
    if (score == -1 && PyErr_Occurred())
        return NULL;
    if (score < loss_next(0) || score > win_next(0)) {
        PyErr_Format(PyExc_ValueError, "%ld is no Connect Four score: they lie in %d..%d", score,
                     loss_next(0), win_next(0));
        return NULL;
    }
    int move = keeping_move(search, board, (int)score);
    if (search->stop)
        return raise_stop(search);
    if (move == -2)
        return NULL;
    if (move == -1)
        Py_RETURN_NONE;
    return PyLong_FromLong(move);
}

static PyObject *
Search_nodes(Search *search, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(search->nodes + search->decided_at_once);
}

static PyObject *
Search_table_size(Search *search, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(search->table->live);
}

static PyObject *
Search_bounds_lost(Search *search, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(search->table->lost);
}

static PyMethodDef Search_methods[] = {
    {"score", (PyCFunction)Search_score, METH_O,
     "score(position)\n--\n\nThe exact score of `position`, finished or not."},
    {"value", (PyCFunction)Search_value, METH_O,
     "value(position)\n--\n\nThe sign of the exact score (1 win, 0 draw, -1 loss for the side to move), "
     "from at most two null-window searches around 0."},
    {"best_move", (PyCFunction)(void (*)(void))Search_best_move, METH_FASTCALL,
     "best_move(position, score)\n--\n\nA column that keeps `score`, the exact score of `position` or a "
     "bound it reaches; None once the game is over."},
    {"nodes", (PyCFunction)Search_nodes, METH_NOARGS,
     "nodes()\n--\n\nPositions visited: by the search, and those scored without one."},
    {"table_size", (PyCFunction)Search_table_size, METH_NOARGS,
     "table_size()\n--\n\nBounds the transposition table holds now."},
    {"bounds_lost", (PyCFunction)Search_bounds_lost, METH_NOARGS,
     "bounds_lost()\n--\n\nBounds this search lost from its table: overwritten by another position's, or "
     "dropped when the table was full. While it is 0 the search visits exactly the positions the "
     "pure-Python search visits."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Search_doc,
             "Search(max_nodes=None, table_capacity=None)\n--\n\n"
             "One solve, or many sharing a transposition table: the compiled twin of PythonSearch in "
             "bots.connect4_exact_search. Past `max_nodes` positions any call raises SolverBudgetExceeded; "
             "the table holds up to `table_capacity` bounds (default 2**23, 8 bytes each) and starts "
             "afresh when full. The table starts empty.");

static PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bots._connect4_exact_search.Search",
    .tp_basicsize = sizeof(Search),
    .tp_dealloc = (destructor)Search_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Search_doc,
    .tp_methods = Search_methods,
    .tp_new = Search_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bots._connect4_exact_search",
    .m_doc = "The exact Connect Four solver's search, compiled: the twin of bots.connect4_exact_search. "
             "Import bots.connect4_solver, which uses this one when it is built.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__connect4_exact_search(void)
{
    if (PyType_Ready(&SearchType) < 0)
        return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created == NULL)
        return NULL;
    Py_INCREF(&SearchType);
    if (PyModule_AddObject(created, "Search", (PyObject *)&SearchType) < 0) {
        Py_DECREF(&SearchType);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
