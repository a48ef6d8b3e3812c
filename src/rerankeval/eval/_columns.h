/* What the string kernels share: a column of string ids read in place, the id hash, buffers.
 *
 * A column is a tuple: (0, int32 offsets, data) or (1, int64 offsets, data) for Arrow strings,
 * (2, object array) for Python str. Every buffer is C-contiguous; outputs are buffers the
 * caller allocates. No numpy headers: buffers only.
 */
#ifndef RERANKEVAL_COLUMNS_H
#define RERANKEVAL_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int kind;
    Py_ssize_t n;
    Py_buffer first, second; /* offsets and data, or the objects */
    int have_first, have_second;
} Column;

static inline void column_release(Column *c) {
    if (c->have_first) PyBuffer_Release(&c->first);
    if (c->have_second) PyBuffer_Release(&c->second);
    c->have_first = c->have_second = 0;
}

/* Refuses any other layout, so that no buffer is read as what it is not (an int array as pointers). */
static inline int column_parse(PyObject *spec, Column *c) {
    memset(c, 0, sizeof(*c));
    PyObject *first = NULL, *second = NULL;
    if (!PyArg_ParseTuple(spec, "iO|O", &c->kind, &first, &second)) return -1;
    if (PyObject_GetBuffer(first, &c->first, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    c->have_first = 1;
    const char *format = c->first.format ? c->first.format : "B";
    int objects = strcmp(format, "O") == 0 && c->first.itemsize == (Py_ssize_t)sizeof(PyObject *);
    int offsets = strcmp(format, "O") != 0 && c->first.itemsize == (c->kind == 0 ? 4 : 8);
    if (!(c->kind == 2 ? objects : (c->kind == 0 || c->kind == 1) && offsets && second != NULL)) {
        PyErr_SetString(PyExc_ValueError,
                        "column: (0, int32 offsets, data), (1, int64 offsets, data) or (2, object array)");
        column_release(c);
        return -1;
    }
    if (c->kind == 2) {
        c->n = c->first.len / (Py_ssize_t)sizeof(PyObject *);
        return 0;
    }
    if (PyObject_GetBuffer(second, &c->second, PyBUF_C_CONTIGUOUS) < 0) {
        column_release(c);
        return -1;
    }
    c->have_second = 1;
    Py_ssize_t width = c->kind == 0 ? 4 : 8;
    c->n = c->first.len / width - 1;
    if (c->n < 0) c->n = 0;
    return 0;
}

/* The UTF-8 bytes of row i. Returns 0, or -1 when the object is not a str (no Python error set),
 * or -2 with a Python error set (a str that cannot be encoded). */
static inline int column_get(const Column *c, Py_ssize_t i, const char **bytes, Py_ssize_t *size) {
    if (c->kind == 0) {
        const int32_t *offsets = (const int32_t *)c->first.buf;
        *bytes = (const char *)c->second.buf + offsets[i];
        *size = offsets[i + 1] - offsets[i];
        return 0;
    }
    if (c->kind == 1) {
        const int64_t *offsets = (const int64_t *)c->first.buf;
        *bytes = (const char *)c->second.buf + offsets[i];
        *size = (Py_ssize_t)(offsets[i + 1] - offsets[i]);
        return 0;
    }
    PyObject *value = ((PyObject *const *)c->first.buf)[i];
    if (!PyUnicode_Check(value)) return -1;
    if (PyUnicode_IS_COMPACT_ASCII(value)) {
        *bytes = (const char *)PyUnicode_DATA(value);
        *size = PyUnicode_GET_LENGTH(value);
        return 0;
    }
    *bytes = PyUnicode_AsUTF8AndSize(value, size);
    return *bytes == NULL ? -2 : 0;
}

/* A row that is not a str: ValueError("not a str", column index, row), which the caller words. */
static inline void set_bad_row(int column, Py_ssize_t row) {
    PyObject *args = Py_BuildValue("(sin)", "not a str", column, row);
    if (args != NULL) {
        PyErr_SetObject(PyExc_ValueError, args);
        Py_DECREF(args);
    }
}

static inline uint64_t load64(const char *p) {
    uint64_t word;
    memcpy(&word, p, 8);
    return word;
}

static inline uint64_t load32(const char *p) {
    uint32_t word;
    memcpy(&word, p, 4);
    return word;
}

/* An id's words: up to 16 bytes, exactly (with the size they determine the bytes: two loads that
 * may overlap, never reading outside the id); a longer id, its first and last 8 bytes. */
static inline void id_words(const char *p, Py_ssize_t n, uint64_t words[2]) {
    if (n >= 8) {
        words[0] = load64(p);
        words[1] = load64(p + n - 8);
    } else {
        const unsigned char *u = (const unsigned char *)p;
        words[0] = n >= 4 ? (load32(p) << 32) | load32(p + n - 4)
                          : n > 0 ? ((uint64_t)u[0] << 16) | ((uint64_t)u[n >> 1] << 8) | u[n - 1] : 0;
        words[1] = 0;
    }
}

/* Multiply-xorshift over the size, the id's words and, past 16 bytes, its middle words; not
 * cryptographic: equal hashes are always compared on the bytes. */
static inline uint64_t hash_words(const char *p, Py_ssize_t n, const uint64_t words[2], uint64_t mask) {
    const uint64_t k = 0x9fb21c651e98df25ULL;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)n * k);
    h = (h ^ words[0]) * k;
    h = (h ^ words[1]) * k;
    for (Py_ssize_t at = 8; at < n - 8; at += 8) h = (h ^ load64(p + at)) * k;
    h ^= h >> 32;
    h *= k;
    h ^= h >> 29;
    return h & mask;
}

static inline uint64_t hash_bytes(const char *p, Py_ssize_t n, uint64_t mask) {
    uint64_t words[2];
    id_words(p, n, words);
    return hash_words(p, n, words, mask);
}

/* Equal ids; up to 16 bytes compared as id_words, without a call to memcmp. */
static inline int same_bytes(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb) {
    if (na != nb) return 0;
    if (na > 16) return memcmp(a, b, (size_t)na) == 0;
    uint64_t x[2], y[2];
    id_words(a, na, x);
    id_words(b, nb, y);
    return x[0] == y[0] && x[1] == y[1];
}

/* A C-contiguous buffer of at least n items of item_size bytes. */
static inline int get_view(PyObject *object, Py_buffer *view, Py_ssize_t n, Py_ssize_t item_size, int writable,
                    const char *what) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (view->len < n * item_size) {
        PyErr_Format(PyExc_ValueError, "%s: buffer too small", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* column_get for a row read for the first time: a value that is not a str becomes set_bad_row's
 * error (index: which of the kernel's columns). */
static inline int read_row(const Column *c, int index, Py_ssize_t row, const char **bytes, Py_ssize_t *size) {
    int got = column_get(c, row, bytes, size);
    if (got == -1) set_bad_row(index, row);
    return got;
}

/* The tie-break's sort key of an id: its first 16 bytes as two big-endian words, zero-padded. */
static inline uint64_t big_endian(const char *bytes, Py_ssize_t size) {
    if (size <= 0) return 0;
    uint64_t word = 0;
    memcpy(&word, bytes, (size_t)(size < 8 ? size : 8));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return word;
#else
    return __builtin_bswap64(word); /* the first byte becomes the most significant */
#endif
}

static inline void sort_key(const char *bytes, Py_ssize_t size, uint64_t *high, uint64_t *low) {
    *high = big_endian(bytes, size);
    *low = big_endian(bytes + 8, size - 8);
}

/* In _group.c. */
PyObject *rerankeval_count_codes(PyObject *self, PyObject *args);
PyObject *rerankeval_group(PyObject *self, PyObject *args);

/* In _ranking.c. */
PyObject *rerankeval_sort_keys(PyObject *self, PyObject *args);
PyObject *rerankeval_break_ties(PyObject *self, PyObject *args);
PyObject *rerankeval_score_keys(PyObject *self, PyObject *args);
PyObject *rerankeval_find_ties(PyObject *self, PyObject *args);
PyObject *rerankeval_ranked_values(PyObject *self, PyObject *args);

#endif
