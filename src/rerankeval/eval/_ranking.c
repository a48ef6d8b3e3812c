/* Ranking kernels: score keys scattered into the (queries x width) matrix, ties found after the
 * sort and broken as trec_eval does (equal scores ordered by doc_id descending, bytes compared as
 * strcmp), and values read out in ranked order. */
#include "_columns.h"

/* sort_keys(column, out, positions): each row's tie-break sort key (two words), at out[i], or at
 * out[positions[i]] when positions is not None: the ids are read in input order, sequentially,
 * and only the keys are written at random, into the layout's grouped order. */

PyObject *rerankeval_sort_keys(PyObject *self, PyObject *args) {
    PyObject *spec, *out_object, *positions_object;
    if (!PyArg_ParseTuple(args, "OOO", &spec, &out_object, &positions_object)) return NULL;
    Column column;
    Py_buffer out, positions;
    int have_positions = 0;
    PyObject *result = NULL;
    if (column_parse(spec, &column) < 0) return NULL;
    if (get_view(out_object, &out, column.n, 16, 1, "keys") < 0) {
        column_release(&column);
        return NULL;
    }
    if (positions_object != Py_None) {
        if (get_view(positions_object, &positions, column.n, 8, 0, "positions") < 0) goto done;
        have_positions = 1;
    }
    uint64_t *keys = out.buf;
    const int64_t *position = have_positions ? positions.buf : NULL;
    Py_ssize_t n_out = out.len / 16;
    enum { AHEAD = 16 };
    for (Py_ssize_t i = 0; i < column.n; i++) {
        if (position && i + AHEAD < column.n && position[i + AHEAD] >= 0 && position[i + AHEAD] < n_out)
            __builtin_prefetch(&keys[2 * position[i + AHEAD]], 1);
        const char *bytes;
        Py_ssize_t size;
        if (read_row(&column, 0, i, &bytes, &size) < 0) goto done;
        int64_t at = position ? position[i] : i;
        if (at < 0 || at >= n_out) {
            PyErr_SetString(PyExc_ValueError, "sort_keys: a position out of range");
            goto done;
        }
        sort_key(bytes, size, &keys[2 * at], &keys[2 * at + 1]);
    }
    result = Py_NewRef(Py_None);
done:
    if (have_positions) PyBuffer_Release(&positions);
    PyBuffer_Release(&out);
    column_release(&column);
    return result;
}

/* break_ties(order, same, queries, width, starts, grouped, docs, keys): in each given matrix row of
 * order (slots sorted by score), every run of slots marked equal by same (same[q, j]: slots j and
 * j + 1 tie) is reordered by doc_id descending, bytes compared as trec_eval's strcmp does. */

typedef struct {
    uint64_t high, low; /* the first 16 bytes, big-endian, zero-padded: most comparisons end here */
    int64_t row;
    int64_t slot;
} Keyed;

/* The column compared when two 16-byte prefixes are equal (qsort takes no context; the GIL is
 * held throughout, so no other call can change it). */
static const Column *tie_docs;

/* Byte order, a proper prefix first (strcmp's order); negated: doc_id descending. */
static int descending(const void *a, const void *b) {
    const Keyed *x = a, *y = b;
    if (x->high != y->high) return x->high < y->high ? 1 : -1;
    if (x->low != y->low) return x->low < y->low ? 1 : -1;
    const char *xb = NULL, *yb = NULL;
    Py_ssize_t xs = 0, ys = 0;
    column_get(tie_docs, x->row, &xb, &xs);
    column_get(tie_docs, y->row, &yb, &ys);
    Py_ssize_t common = xs < ys ? xs : ys;
    int c = common > 16 ? memcmp(xb + 16, yb + 16, (size_t)(common - 16)) : 0;
    if (c == 0) c = (xs > ys) - (xs < ys);
    return -c;
}

PyObject *rerankeval_break_ties(PyObject *self, PyObject *args) {
    PyObject *objects[6], *docs_spec;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOnOOOO", &objects[0], &objects[1], &objects[2], &width, &objects[3], &objects[4],
                          &docs_spec, &objects[5]))
        return NULL;
    Column docs = {0};
    Py_buffer views[6];
    int held[6] = {0};
    Keyed *scratch = NULL;
    PyObject *result = NULL;
    if (column_parse(docs_spec, &docs) < 0) goto done;
    /* order (n_codes x width, int64), same (n_codes x (width - 1), bytes), queries, starts, grouped,
     * keys (None, or sort_keys' keys in grouped order) */
    const char *names[6] = {"order", "same", "queries", "starts", "grouped", "keys"};
    const Py_ssize_t item_sizes[6] = {8, 1, 8, 8, 8, 16};
    for (int k = 0; k < 6; k++) {
        if (k == 5 && objects[k] == Py_None) continue;
        if (get_view(objects[k], &views[k], 0, item_sizes[k], k == 0, names[k]) < 0) goto done;
        held[k] = 1;
    }
    const uint64_t *keys = held[5] ? views[5].buf : NULL;
    tie_docs = &docs;
    scratch = malloc((size_t)(width ? width : 1) * sizeof(Keyed));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    Py_buffer order = views[0], same = views[1], queries = views[2], starts = views[3], grouped = views[4];
    int64_t *order_of = order.buf;
    const uint8_t *same_of = same.buf;
    const int64_t *query_of = queries.buf, *start_of = starts.buf, *grouped_of = grouped.buf;
    Py_ssize_t n_queries = queries.len / 8;
    for (Py_ssize_t k = 0; k < n_queries; k++) {
        int64_t q = query_of[k];
        int64_t *slots = order_of + q * width;
        const uint8_t *ties = same_of + q * (width - 1);
        Py_ssize_t j = 0;
        while (j < width - 1) {
            if (!ties[j]) {
                j++;
                continue;
            }
            Py_ssize_t end = j + 1;
            while (end < width - 1 && ties[end]) end++;
            /* slots j..end tie */
            for (Py_ssize_t i = j; i <= end; i++) {
                int64_t at = start_of[q] + slots[i];
                Keyed *item = &scratch[i - j];
                item->row = grouped_of[at];
                item->slot = slots[i];
                if (keys != NULL) {
                    item->high = keys[2 * at];
                    item->low = keys[2 * at + 1];
                } else {
                    const char *bytes;
                    Py_ssize_t size;
                    if (read_row(&docs, 0, item->row, &bytes, &size) < 0) goto done;
                    sort_key(bytes, size, &item->high, &item->low);
                }
            }
            Py_ssize_t tied = end - j + 1;
            if (tied > 16) {
                qsort(scratch, (size_t)tied, sizeof(Keyed), descending);
            } else {
                for (Py_ssize_t i = 1; i < tied; i++) { /* insertion sort: most ties are short */
                    Keyed moving = scratch[i];
                    Py_ssize_t at = i;
                    for (; at > 0 && descending(&scratch[at - 1], &moving) > 0; at--) scratch[at] = scratch[at - 1];
                    scratch[at] = moving;
                }
            }
            for (Py_ssize_t i = j; i <= end; i++) slots[i] = scratch[i - j].slot;
            j = end + 1;
        }
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    column_release(&docs);
    free(scratch);
    return result;
}

/* score_keys(scores, cells, slot_bits, out): out[cells[i]] (cells None: out[i]) = the descending
 * key of scores[i] shifted above slot_bits. Scores compare as 32-bit floats, as trec_eval stores
 * them, and 0.0 equals -0.0. One pass and no temporaries: the same in numpy made four arrays of
 * 40-80 MB for 10M rows, and zeroing fresh pages cost as much as the arithmetic. */
PyObject *rerankeval_score_keys(PyObject *self, PyObject *args) {
    PyObject *objects[3];
    int slot_bits;
    if (!PyArg_ParseTuple(args, "OOiO", &objects[0], &objects[1], &slot_bits, &objects[2])) return NULL;
    Py_buffer views[3];
    int held[3] = {0};
    PyObject *result = NULL;
    const char *names[3] = {"scores", "cells", "out"};
    for (int k = 0; k < 3; k++) {
        if (k == 1 && objects[k] == Py_None) continue;
        if (get_view(objects[k], &views[k], 0, 8, k == 2, names[k]) < 0) goto done;
        held[k] = 1;
    }
    const double *scores = views[0].buf;
    const int64_t *cells = held[1] ? views[1].buf : NULL;
    uint64_t *out = views[2].buf;
    Py_ssize_t n = views[0].len / 8, n_out = views[2].len / 8;
    if ((cells ? views[1].len / 8 : n_out) < n || slot_bits < 0 || slot_bits > 32) {
        PyErr_SetString(PyExc_ValueError, "score_keys: scores, cells and out differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        float value = (float)scores[i] + 0.0f; /* -0.0 becomes 0.0 */
        uint32_t bits;
        memcpy(&bits, &value, 4);
        /* Order-preserving bits flip a negative's bits and a positive's sign bit; descending
         * inverts them all: a negative's bits stay, a positive's flip but for the sign. */
        bits ^= ((bits >> 31) - 1u) & 0x7fffffffu;
        int64_t cell = cells ? cells[i] : i;
        if (cell < 0 || cell >= n_out) {
            PyErr_SetString(PyExc_ValueError, "score_keys: a cell out of range");
            goto done;
        }
        out[cell] = (uint64_t)bits << slot_bits;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 3; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    return result;
}

/* find_ties(keys, width, slot_bits, same_out) -> whether any: in each row of sorted keys, slots j
 * and j + 1 tie when their values (the bits above slot_bits) are equal, padding (all ones there)
 * excluded. same_out None: stops at the first tie; else it gets same[q, j] for every pair. */
PyObject *rerankeval_find_ties(PyObject *self, PyObject *args) {
    PyObject *keys_object, *same_object;
    Py_ssize_t width;
    int slot_bits;
    if (!PyArg_ParseTuple(args, "OniO", &keys_object, &width, &slot_bits, &same_object)) return NULL;
    Py_buffer keys, same;
    int marking = same_object != Py_None;
    if (width < 1 || slot_bits < 0 || slot_bits > 63) {
        PyErr_SetString(PyExc_ValueError, "find_ties: bad width or slot_bits");
        return NULL;
    }
    if (get_view(keys_object, &keys, 0, 8, 0, "keys") < 0) return NULL;
    Py_ssize_t rows = keys.len / 8 / width;
    if (marking && get_view(same_object, &same, rows * (width - 1), 1, 1, "same") < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    const uint64_t *key = keys.buf, padding = ~(uint64_t)0 >> slot_bits;
    uint8_t *marks = marking ? same.buf : NULL;
    int any = 0;
    for (Py_ssize_t q = 0; q < rows && (marking || !any); q++) {
        const uint64_t *row = key + q * width;
        for (Py_ssize_t j = 0; j + 1 < width; j++) {
            uint64_t value = row[j + 1] >> slot_bits;
            int tie = value == row[j] >> slot_bits && value != padding;
            if (marking) marks[q * (width - 1) + j] = (uint8_t)tie;
            any |= tie;
        }
    }
    PyBuffer_Release(&keys);
    if (marking) PyBuffer_Release(&same);
    return PyBool_FromLong(any);
}

/* ranked_values(values, order, rows, starts, counts, pad, out): out[rows[q], j] = the value at
 * slot order[q, j] of query q, pad past the query's rows; a query whose rows[q] is -1 is left out.
 * values: one int8 or int16 per row, in the layout's grouped order (query q's rows at
 * starts[q]:starts[q] + counts[q]). One pass in place of a (queries x width) matrix of the values,
 * numpy's take_along_axis and a row selection, each a fresh array; queries are read in order and
 * written where they go (reading them in output order, sorted by id, reads order and values at
 * random, several times slower: results/benchmarks/kernels.yaml). */
PyObject *rerankeval_ranked_values(PyObject *self, PyObject *args) {
    PyObject *objects[6];
    int pad;
    if (!PyArg_ParseTuple(args, "OOOOOiO", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4], &pad,
                          &objects[5]))
        return NULL;
    Py_buffer views[6];
    int held[6] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 6; k++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (k == 5 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objects[k], &views[k], flags) < 0) goto done;
        held[k] = 1;
    }
    Py_ssize_t size = views[0].itemsize, n = views[0].len / size, n_codes = views[3].len / 8;
    Py_ssize_t width = n_codes ? views[1].len / 8 / n_codes : 0, n_out = width ? views[5].len / size / width : 0;
    if ((size != 1 && size != 2) || views[5].itemsize != size || views[1].itemsize != 8 || views[2].itemsize != 8 ||
        views[3].itemsize != 8 || views[2].len != views[3].len || views[4].len != views[3].len ||
        views[1].len / 8 != n_codes * width || views[5].len != n_out * width * size) {
        PyErr_SetString(PyExc_ValueError, "ranked_values: the buffers do not fit together");
        goto done;
    }
    const int64_t *order = views[1].buf, *rows = views[2].buf, *starts = views[3].buf, *counts = views[4].buf;
    /* Locals, not views[k].buf: a byte store may alias anything, so fields would be read again
     * after every store. */
    const int8_t *values8 = views[0].buf;
    const int16_t *values16 = views[0].buf;
    int8_t *out8 = views[5].buf;
    int16_t *out16 = views[5].buf;
    for (Py_ssize_t q = 0; q < n_codes; q++) {
        const int64_t k = rows[q];
        if (k < 0) continue;
        if (k >= n_out || starts[q] < 0 || counts[q] < 0 || starts[q] + counts[q] > n) {
            PyErr_SetString(PyExc_ValueError, "ranked_values: a query out of range");
            goto done;
        }
        const int64_t *slots = order + q * width, start = starts[q], count = counts[q];
        if (size == 1) {
            for (Py_ssize_t j = 0; j < width; j++)
                out8[k * width + j] = slots[j] >= 0 && slots[j] < count ? values8[start + slots[j]] : (int8_t)pad;
        } else {
            for (Py_ssize_t j = 0; j < width; j++)
                out16[k * width + j] = slots[j] >= 0 && slots[j] < count ? values16[start + slots[j]] : (int16_t)pad;
        }
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    return result;
}
