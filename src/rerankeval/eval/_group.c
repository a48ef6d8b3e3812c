/* Rows grouped by query code: how many each code has, and a stable counting sort that carries each
 * row's id hash along for the join (_strings.c). */
#include "_columns.h"

/* count_codes(codes, counts_out) -> whether the codes never decrease (rows in query order):
 * counts_out (zeros) gets each code's number of rows. One pass where np.bincount and the order
 * check took two and a cast (results/benchmarks/kernels.yaml). */
PyObject *rerankeval_count_codes(PyObject *self, PyObject *args) {
    PyObject *codes_object, *counts_object;
    if (!PyArg_ParseTuple(args, "OO", &codes_object, &counts_object)) return NULL;
    Py_buffer codes, counts;
    if (get_view(codes_object, &codes, 0, 8, 0, "codes") < 0) return NULL;
    if (get_view(counts_object, &counts, 0, 8, 1, "counts") < 0) {
        PyBuffer_Release(&codes);
        return NULL;
    }
    const int64_t *code = codes.buf;
    int64_t *count = counts.buf, previous = INT64_MIN;
    Py_ssize_t n = codes.len / 8, n_codes = counts.len / 8;
    int in_order = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (code[i] < 0 || code[i] >= n_codes) {
            PyErr_SetString(PyExc_ValueError, "count_codes: a code out of range");
            break;
        }
        count[code[i]]++;
        in_order &= code[i] >= previous;
        previous = code[i];
    }
    PyBuffer_Release(&codes);
    PyBuffer_Release(&counts);
    return PyErr_Occurred() ? NULL : PyBool_FromLong(in_order);
}

/* group(codes, cursors, packed_out, positions_out, column, row_bits, hash_mask): rows grouped by
 * code, in input order within a code (a stable counting sort). cursors holds each code's first
 * position and is consumed. packed_out gets, in grouped order, each row with its id's hash above
 * it: row | (hash with its low row_bits cleared); positions_out each row's place there. The ids
 * are read in input order, sequentially, and only the outputs are written at random (writes,
 * unlike reads, do not wait for memory: numpy's scatter beats its gather). One packed array, where
 * rows and hashes were two, writes one line at random per row, which is faster on
 * bench_metrics.py's scenario b (results/benchmarks/kernels.yaml). */

PyObject *rerankeval_group(PyObject *self, PyObject *args) {
    PyObject *objects[4], *spec;
    int row_bits;
    unsigned long long hash_mask;
    if (!PyArg_ParseTuple(args, "OOOOOiK", &objects[0], &objects[1], &objects[2], &objects[3], &spec, &row_bits,
                          &hash_mask))
        return NULL;
    Column column = {0};
    Py_buffer views[4];
    int held[4] = {0};
    PyObject *result = NULL;
    if (column_parse(spec, &column) < 0) return NULL;
    const char *names[4] = {"codes", "cursors", "packed", "positions"};
    for (int k = 0; k < 4; k++) {
        if (get_view(objects[k], &views[k], 0, 8, k > 0, names[k]) < 0) goto done;
        held[k] = 1;
    }
    const int64_t *codes = views[0].buf;
    int64_t *cursors = views[1].buf, *positions = views[3].buf;
    uint64_t *packed = views[2].buf;
    Py_ssize_t n = views[0].len / 8, n_codes = views[1].len / 8;
    if (views[2].len / 8 < n || views[3].len / 8 < n || column.n != n || row_bits < 0 ||
        row_bits > 62 || (uint64_t)n > (uint64_t)1 << row_bits) {
        PyErr_SetString(PyExc_ValueError, "group: codes, packed, positions and column differ in length");
        goto done;
    }
    const uint64_t above_rows = ~(((uint64_t)1 << row_bits) - 1);
    enum { AHEAD = 16 };
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + AHEAD < n) { /* where a row a little ahead will be written */
            int64_t ahead = codes[i + AHEAD];
            if (ahead >= 0 && ahead < n_codes && cursors[ahead] >= 0 && cursors[ahead] < n)
                __builtin_prefetch(&packed[cursors[ahead]], 1);
        }
        int64_t code = codes[i];
        if (code < 0 || code >= n_codes) {
            PyErr_SetString(PyExc_ValueError, "group: a code out of range");
            goto done;
        }
        int64_t at = cursors[code]++;
        if (at < 0 || at >= n) {
            PyErr_SetString(PyExc_ValueError, "group: cursors do not match the codes");
            goto done;
        }
        const char *bytes;
        Py_ssize_t size;
        if (read_row(&column, 0, i, &bytes, &size) < 0) goto done;
        packed[at] = (hash_bytes(bytes, size, hash_mask) & above_rows) | (uint64_t)i;
        positions[i] = at;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 4; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    column_release(&column);
    return result;
}
