/* Checkers' history table for the kernel's move ordering, included by checkers.c after its Move type and
 * its geometry (ROW_OF, COLUMN_OF).
 *
 * bots/ordering.py's history is a dict per side keyed by the move's path: here a table with open
 * addressing keyed by a 64-bit code of the path (see move_code), grown to stay at most half full.
 * Connect Four and Othello index theirs by the move itself; a checkers path has no such small number.
 */
typedef struct {
    uint64_t *codes; /* 0: an empty slot */
    int64_t *counts;
    size_t mask;
    size_t used;
} History;

/* A path as one number: its origin, whether it captures, its hops, and each hop's direction (two bits:
 * down or up a row, left or right a column). Different paths give different codes; never 0. */
static uint64_t move_code(const Move *move)
{
    uint64_t code = (uint64_t)(move->squares[0] - 1) | (uint64_t)(move->captured != 0) << 5
                    | (uint64_t)move->length << 6;
    for (int hop = 1; hop < move->length; hop++) {
        int from = move->squares[hop - 1] - 1, to = move->squares[hop] - 1;
        uint64_t direction = (uint64_t)(ROW_OF[to] > ROW_OF[from]) << 1 | (COLUMN_OF[to] > COLUMN_OF[from]);
        code |= direction << (11 + 2 * (hop - 1));
    }
    return code;
}

static int history_init(History *history)
{
    history->mask = 255;
    history->used = 0;
    history->codes = PyMem_Calloc(history->mask + 1, sizeof(uint64_t));
    history->counts = PyMem_Calloc(history->mask + 1, sizeof(int64_t));
    return history->codes != NULL && history->counts != NULL ? 0 : -1;
}

static void history_free(History *history)
{
    PyMem_Free(history->codes);
    PyMem_Free(history->counts);
}

static void history_clear(History *history)
{
    memset(history->codes, 0, (history->mask + 1) * sizeof(uint64_t));
    memset(history->counts, 0, (history->mask + 1) * sizeof(int64_t));
    history->used = 0;
}

/* The slot of code, or of the empty slot where it goes: linear probing from a multiplicative hash. */
static size_t history_find(const History *history, uint64_t code)
{
    size_t slot = (size_t)((code * XXPRIME_1) >> 40) & history->mask;
    while (history->codes[slot] != 0 && history->codes[slot] != code) {
        slot = (slot + 1) & history->mask;
    }
    return slot;
}

/* Twice the slots, every entry moved over; on failure the table stays as it was, only fuller. */
static void history_grow(History *history)
{
    History larger = {NULL, NULL, history->mask * 2 + 1, history->used};
    larger.codes = PyMem_Calloc(larger.mask + 1, sizeof(uint64_t));
    larger.counts = PyMem_Calloc(larger.mask + 1, sizeof(int64_t));
    if (larger.codes == NULL || larger.counts == NULL) {
        history_free(&larger);
        return;
    }
    for (size_t slot = 0; slot <= history->mask; slot++) {
        if (history->codes[slot] != 0) {
            size_t moved = history_find(&larger, history->codes[slot]);
            larger.codes[moved] = history->codes[slot];
            larger.counts[moved] = history->counts[slot];
        }
    }
    history_free(history);
    *history = larger;
}

static int64_t *history_slot(History *history, int side, const Move *move)
{
    uint64_t code = move_code(move) | (uint64_t)side << 62;
    size_t slot = history_find(history, code);
    if (history->codes[slot] == 0) {
        if (2 * (history->used + 1) > history->mask + 1) {
            history_grow(history);
            slot = history_find(history, code);
        }
        history->codes[slot] = code;
        history->used++;
    }
    return &history->counts[slot];
}
