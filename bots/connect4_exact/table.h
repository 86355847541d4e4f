/*
 * The compiled exact search's transposition table (module.c): a bound per position, in a fixed number of
 * slots, emptied in constant time.
 */
#ifndef CONNECT4_EXACT_TABLE_H
#define CONNECT4_EXACT_TABLE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/*
 * One 64-bit word a slot: the key's remainder (below), then a 24-bit generation, then the stored bound as a
 * signed byte. A slot holds one position; a newer one takes its place (the older bound is lost, which
 * costs time, never correctness).
 *
 * Keys are below 2^49. Multiplying by an odd number modulo 2^49 shuffles them one to one (`hashed`); the
 * top `index_bits` of the product pick the slot and the other 49 - index_bits bits, at most 32 for a
 * table of 2^17 slots or more, are stored: slot and remainder together give back the product, hence the
 * key. Pons' tables take the key modulo a prime instead (a key modulo 2^32 and modulo the prime tell it
 * apart by the Chinese remainder theorem); but keys of one search differ by sums of a few powers of two,
 * and with a prime near 2^23 they met in one slot 16 to 25 times as often as at random (measured over the
 * tables of 300 of Pons' positions), where the multiplication stays at the random rate.
 *
 * Starting afresh bumps the generation instead of clearing the slots: a slot of another generation is
 * empty. A solve per position therefore costs no memset of tens of megabytes, and a search can begin
 * with an empty table at the cost of one addition.
 */
#define KEY_BITS 49
#define GENERATION_BITS 24
#define MIN_INDEX_BITS 17 /* a remainder of 49 - 17 = 32 bits fits its half of the slot */
#define MAX_INDEX_BITS 40
/* 2^49 divided by the golden ratio, made odd: Knuth's multiplicative hashing, scaled to the keys. */
#define MULTIPLIER UINT64_C(347922205179541)

typedef struct {
    uint64_t *slots;
    int index_bits;      /* 2^index_bits slots */
    uint64_t capacity;   /* entries it holds before it starts afresh (see table_empty_for) */
    uint64_t live;       /* entries of the current generation */
    uint64_t lost;       /* bounds lost since the search began: overwritten, or dropped when full */
    uint32_t generation; /* 1 to 2^24 - 1; 0 marks a slot never written */
} Table;

/* The slots for `capacity` entries, as a power of two: the largest that does not exceed it, within
   [MIN_INDEX_BITS, MAX_INDEX_BITS]. */
static int
index_bits_for(uint64_t capacity)
{
    int bits = MIN_INDEX_BITS;
    while (bits < MAX_INDEX_BITS && (UINT64_C(2) << bits) <= capacity)
        bits++;
    return bits;
}

/* A table of 2^index_bits empty slots; NULL with MemoryError set if there is no room. Cleared here, so
   that every page is mapped once, when the table is made: left to calloc, the system maps each page as a
   search first writes to it, and the first thousand short solves of a process paid some 25 us each for
   it (Pons' Test_L3_R1: 0.030 ms a position against 0.004). */
static Table *
table_new(int index_bits)
{
    Table *table = PyMem_RawMalloc(sizeof(Table));
    if (table == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    /* (2^index_bits slots of 8 bytes must be countable in a size_t, 32 bits on some machines) */
    table->slots = index_bits < (int)(sizeof(size_t) * 8) - 3
                       ? PyMem_RawCalloc((size_t)1 << index_bits, sizeof(uint64_t))
                       : NULL;
    if (table->slots == NULL) {
        PyMem_RawFree(table);
        PyErr_NoMemory();
        return NULL;
    }
    memset(table->slots, 0, ((size_t)1 << index_bits) * sizeof(uint64_t));
    table->index_bits = index_bits;
    table->capacity = UINT64_MAX;
    table->live = table->lost = 0;
    table->generation = 1;
    return table;
}

static void
table_free(Table *table)
{
    if (table != NULL) {
        PyMem_RawFree(table->slots);
        PyMem_RawFree(table);
    }
}

/* Empty the table: a new generation, or after 2^24 - 1 of them a real clear. */
static void
table_start_afresh(Table *table)
{
    table->lost += table->live;
    table->live = 0;
    if (++table->generation == (UINT32_C(1) << GENERATION_BITS)) {
        memset(table->slots, 0, ((size_t)1 << table->index_bits) * sizeof(uint64_t));
        table->generation = 1;
    }
}

/* Empty the table for a new search that asked for `capacity` entries. Where that is fewer than its slots
   (a table of 2^17 slots asked for less), the table starts afresh whenever it holds that many, as the
   Python search's dict does; otherwise newer bounds take the place of older ones, slot by slot, and the
   table never empties itself at once. */
static void
table_empty_for(Table *table, uint64_t capacity)
{
    table_start_afresh(table);
    table->lost = 0;
    table->capacity = capacity < ((uint64_t)1 << table->index_bits) ? capacity : UINT64_MAX;
}

/* The key shuffled one to one within its 49 bits. */
static inline uint64_t
hashed(uint64_t key)
{
    return (key * MULTIPLIER) & ((UINT64_C(1) << KEY_BITS) - 1);
}

/* The slot of a hashed key: its top bits. */
static inline uint64_t *
table_slot(const Table *table, uint64_t hash)
{
    return &table->slots[hash >> (KEY_BITS - table->index_bits)];
}

/* A slot's word without its stored bound, as it reads when it holds the hashed key in this generation:
   the hash's bits below the index, and the generation. */
static inline uint64_t
table_tag(const Table *table, uint64_t hash)
{
    uint64_t remainder = hash & ((UINT64_C(1) << (KEY_BITS - table->index_bits)) - 1);
    return remainder << 32 | (uint64_t)table->generation << 8;
}

/* Whether the table holds a bound for `key`; if so it is put in `*bound`. */
static inline int
table_get(const Table *table, uint64_t key, int *bound)
{
    uint64_t hash = hashed(key);
    uint64_t slot = *table_slot(table, hash);
    if ((slot & ~UINT64_C(0xFF)) != table_tag(table, hash))
        return 0;
    *bound = (int8_t)(slot & 0xFF);
    return 1;
}

/* Ask the processor to bring `key`'s slot into the cache while other work goes on. */
static inline void
table_prefetch(const Table *table, uint64_t key)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(table_slot(table, hashed(key)));
#else
    (void)table, (void)key;
#endif
}

static inline void
table_put(Table *table, uint64_t key, int bound)
{
    uint64_t hash = hashed(key);
    uint64_t *slot = table_slot(table, hash);
    uint64_t tag = table_tag(table, hash);
    if ((*slot >> 8 & ((UINT64_C(1) << GENERATION_BITS) - 1)) != table->generation) {
        /* A new entry: the table starts afresh first if it holds all it may (see table_empty_for). */
        if (table->live >= table->capacity) {
            table_start_afresh(table);
            tag = table_tag(table, hash);
        }
        table->live++;
    }
    else if ((*slot & ~UINT64_C(0xFF)) != tag) {
        table->lost++; /* another position's bound gives way */
    }
    *slot = tag | (uint8_t)(int8_t)bound;
}

#endif
