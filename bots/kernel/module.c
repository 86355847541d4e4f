/* bots._kernel: the compiled alpha-beta, move generation, evaluation and perft of the bitboard games, and
 * Othello's exact endgame.
 *
 * One type per game (Connect4, Othello, Checkers), each from its own file; bots/speedups.py imports this
 * module when it was built, and the pure-Python search runs wherever it was not.
 */
#include "kernel.h"

int kernel_add_connect4(PyObject *module);
int kernel_add_othello(PyObject *module);
int kernel_add_checkers(PyObject *module);

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bots._kernel",
    .m_doc = "The compiled negamax kernel of bots/negamax.py, per game; see bots/speedups.py.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    PyObject *module = PyModule_Create(&kernel_module);
    if (module == NULL) {
        return NULL;
    }
    if (kernel_add_connect4(module) < 0 || kernel_add_othello(module) < 0
        || kernel_add_checkers(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
