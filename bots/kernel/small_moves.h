/* The hooks negamax.h and searcher_type.h ask of a game whose move is one small number (a Connect Four
 * column, an Othello square) and whose history is a plain table of counts per side and move: the same in
 * every such game, so written once. A game's file defines Move (an integer type) and
 * History { int64_t counts[2][N]; } with N above every move, then includes this before negamax.h.
 */
#ifndef PLYARENA_SMALL_MOVES_H
#define PLYARENA_SMALL_MOVES_H

static int same_move(const Move *first, const Move *second)
{
    return *first == *second;
}

static int64_t *history_slot(History *history, int side, const Move *move)
{
    return &history->counts[side][*move];
}

static void history_clear(History *history)
{
    memset(history, 0, sizeof(*history));
}

static int history_init(History *history)
{
    history_clear(history);
    return 0;
}

static void history_free(History *Py_UNUSED(history))
{
}

static PyObject *move_to_python(const Move *move)
{
    return PyLong_FromLong(*move);
}

/* The position holds no references: nothing to release. */
static void release_position(Position *Py_UNUSED(position))
{
}

#endif
