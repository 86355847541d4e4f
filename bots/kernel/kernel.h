/* What every game's kernel shares: the score scale of bots/result.py, bit helpers, and Python's hash.
 *
 * The kernel is an optional speed-up of bots/negamax.py (see bots/speedups.py): the Python code is the
 * reference, and everything here reproduces it number for number. Scores and table conventions are
 * therefore copied from the Python modules named beside each constant, not chosen here.
 */
#ifndef PLYARENA_KERNEL_H
#define PLYARENA_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#ifdef _MSC_VER
#include <intrin.h>
#endif

/* bots/result.py: a win n plies away scores WIN - n; evaluations stay far below DECISIVE. */
#define WIN 1000000
#define MAX_GAME_PLY 10000
#define DECISIVE (WIN - MAX_GAME_PLY)
#define INFINITE_SCORE (WIN + 1)

/* bots/negamax.py's MAX_DEPTH, and room for the plies below the deepest search (leaves sit at depth + 1). */
#define MAX_DEPTH 100
#define MAX_PLY (MAX_DEPTH + 2)

/* bots/deadline.py: the clock is read every 1024 nodes, when the node count has these bits clear. */
#define CHECK_MASK 1023

/* bots/transposition.py's bound kinds. */
enum { EXACT = 0, LOWER = 1, UPPER = 2 };

/* bots/transposition.py's to_table: a won or lost score re-measured from a node ply plies down. */
static inline int to_table(int score, int ply)
{
    if (score > DECISIVE) {
        return score + ply;
    }
    if (score < -DECISIVE) {
        return score - ply;
    }
    return score;
}

/* The inverse of to_table. */
static inline int from_table(int score, int ply)
{
    if (score > DECISIVE) {
        return score - ply;
    }
    if (score < -DECISIVE) {
        return score + ply;
    }
    return score;
}

/* The number of set bits: what Python's int.bit_count() gives. */
static inline int popcount(uint64_t bits)
{
#ifdef _MSC_VER
    return (int)__popcnt64(bits);
#else
    return __builtin_popcountll(bits);
#endif
}

/* The index of the lowest set bit of a non-zero board: int.bit_length() - 1 of bits & -bits. */
static inline int lowest_bit(uint64_t bits)
{
#ifdef _MSC_VER
    unsigned long index;
    _BitScanForward64(&index, bits);
    return (int)index;
#else
    return __builtin_ctzll(bits);
#endif
}

/* The index of the highest set bit of a non-zero board: int.bit_length() - 1. */
static inline int highest_bit(uint64_t bits)
{
#ifdef _MSC_VER
    unsigned long index;
    _BitScanReverse64(&index, bits);
    return (int)index;
#else
    return 63 - __builtin_clzll(bits);
#endif
}

/* Python's hash() of the ints and tuples that the games use as keys, so that a table of the kernel puts
 * every position in the slot that bots/transposition.py's table would: both then replace the same
 * entries, and a search counts the same nodes compiled or not. tests/test_kernel.py hold these to
 * Python's own hash(). */

/* sys.hash_info.modulus: the hash of a non-negative int is the int modulo this Mersenne prime. */
#define HASH_MODULUS ((1ULL << 61) - 1)

/* A value below 2**128, given as its low and high 64 bits, reduced modulo 2**61 - 1. Since 2**61 = 1
 * modulo 2**61 - 1, a number is congruent to the sum of its 61-bit digits; the high half's digits start
 * 3 bits into it (2**64 = 2**3 * 2**61). The sum stays below 2**63, so two subtractions at most. */
static inline uint64_t hash_reduce(uint64_t low, uint64_t high)
{
    uint64_t sum = (low & HASH_MODULUS) + (low >> 61) + ((high << 3) & HASH_MODULUS) + (high >> 58);
    while (sum >= HASH_MODULUS) {
        sum -= HASH_MODULUS;
    }
    return sum;
}

/* hash(n) for 0 <= n < 2**64. */
static inline uint64_t hash_int(uint64_t value)
{
    return hash_reduce(value, 0);
}

/* CPython's tuple hash (xxHash's mixing, Objects/tupleobject.c since 3.8) over the hashes of the items. */
#define XXPRIME_1 11400714785074694791ULL
#define XXPRIME_2 14029467366897019727ULL
#define XXPRIME_5 2870177450012600261ULL

static inline uint64_t hash_tuple(const uint64_t *item_hashes, int length)
{
    uint64_t accumulator = XXPRIME_5;
    for (int index = 0; index < length; index++) {
        accumulator += item_hashes[index] * XXPRIME_2;
        accumulator = (accumulator << 31) | (accumulator >> 33); /* rotate left by 31 */
        accumulator *= XXPRIME_1;
    }
    accumulator += (uint64_t)length ^ (XXPRIME_5 ^ 3527539ULL);
    return accumulator == (uint64_t)-1 ? 1546275796ULL : accumulator;
}

/* An unsigned 64-bit int from a Python int, or -1 with an exception set if it is not one or too big. */
static inline int board_from_python(PyObject *value, uint64_t *board)
{
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "expected an int bitboard, got %R", value);
        return -1;
    }
    *board = PyLong_AsUnsignedLongLong(value);
    if (*board == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "expected a bitboard between 0 and 2**64 - 1, got %R", value);
        return -1;
    }
    return 0;
}

#endif /* PLYARENA_KERNEL_H */
