/* String-id kernels of the grade matrix: query-id coding and the run/qrels join by (query,
 * doc_id) with duplicate checks; trec_eval's tie-break is in _ties.c, the shared column reader in
 * _columns.h.
 *
 * Why compiled code: the join must read every id once. On 10M run rows, reading ids that are
 * plain Python str objects through any library costs more than the whole evaluation is allowed
 * (pyarrow's pa.array 0.24 s per column, pyarrow's dictionary_encode 1.65 s, polars' join 0.66 s,
 * pandas' factorize 4.9 s; benchmarks/bench_metrics.py). Here each id is read in place, from
 * Arrow's buffers or from the str object, and hashed once: benchmarks/bench_metrics.py has the
 * numbers. Equal hashes are always confirmed on the bytes, so a collision costs time, never a
 * wrong result.
 */
#include "_columns.h"

/* ------------------------------------------------------------------------------------------- */
/* factorize(columns, codes_out, hash_mask) -> list of distinct str, in order of first appearance.
 * codes_out gets each row's code, the columns' rows one after the other. */

/* Open addressing; a slot's hash and code side by side, so a lookup reads one cache line. */
typedef struct {
    uint64_t hash;
    int64_t code; /* -1: empty */
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
} Table;

static int table_init(Table *t, size_t capacity) {
    t->slots = malloc(capacity * sizeof(Slot));
    if (!t->slots) return -1;
    memset(t->slots, 0xff, capacity * sizeof(Slot));
    t->mask = capacity - 1;
    return 0;
}

static int table_grow(Table *t) {
    Table bigger;
    if (table_init(&bigger, (t->mask + 1) * 2) < 0) return -1;
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->slots[i].code < 0) continue;
        size_t slot = t->slots[i].hash & bigger.mask;
        while (bigger.slots[slot].code >= 0) slot = (slot + 1) & bigger.mask;
        bigger.slots[slot] = t->slots[i];
    }
    free(t->slots);
    *t = bigger;
    return 0;
}

/* The distinct strings, packed: code k is arena[starts[k]:starts[k + 1]]. */
typedef struct {
    char *arena;
    size_t used, size;
    int64_t *starts;
    size_t n, capacity;
} Distinct;

static int distinct_add(Distinct *d, const char *bytes, Py_ssize_t size) {
    if (d->n + 2 > d->capacity) {
        size_t capacity = d->capacity ? d->capacity * 2 : 1024;
        int64_t *starts = realloc(d->starts, capacity * sizeof(int64_t));
        if (!starts) return -1;
        d->starts = starts;
        d->capacity = capacity;
    }
    if (d->arena == NULL || d->used + (size_t)size > d->size) {
        size_t grown = d->size ? d->size * 2 : 65536;
        while (grown < d->used + (size_t)size) grown *= 2;
        char *arena = realloc(d->arena, grown);
        if (!arena) return -1;
        d->arena = arena;
        d->size = grown;
    }
    if (d->n == 0) d->starts[0] = 0;
    memcpy(d->arena + d->used, bytes, (size_t)size);
    d->used += (size_t)size;
    d->n++;
    d->starts[d->n] = (int64_t)d->used;
    return 0;
}

static PyObject *factorize(PyObject *self, PyObject *args) {
    PyObject *specs, *codes_object;
    unsigned long long hash_mask;
    if (!PyArg_ParseTuple(args, "O!OK", &PyTuple_Type, &specs, &codes_object, &hash_mask)) return NULL;
    Py_ssize_t n_columns = PyTuple_GET_SIZE(specs), total = 0;
    Column *columns = calloc((size_t)(n_columns ? n_columns : 1), sizeof(Column));
    Py_buffer codes_view;
    Table table = {0};
    Distinct distinct = {0};
    PyObject *result = NULL;
    int have_codes = 0;
    if (!columns) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n_columns; k++) {
        if (column_parse(PyTuple_GET_ITEM(specs, k), &columns[k]) < 0) goto done;
        total += columns[k].n;
    }
    if (get_view(codes_object, &codes_view, total, 8, 1, "codes") < 0) goto done;
    have_codes = 1;
    if (table_init(&table, 1024) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *codes = (int64_t *)codes_view.buf;
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < n_columns; k++) {
        const Column *c = &columns[k];
        const char *previous = NULL;
        Py_ssize_t previous_size = -1;
        int64_t previous_code = -1;
        for (Py_ssize_t i = 0; i < c->n; i++, at++) {
            const char *bytes;
            Py_ssize_t size;
            if (read_row(c, (int)k, i, &bytes, &size) < 0) goto done;
            /* Runs group their rows by query: most rows repeat the previous id. */
            if (previous_code >= 0 && same_bytes(bytes, size, previous, previous_size)) {
                codes[at] = previous_code;
                continue;
            }
            uint64_t h = hash_bytes(bytes, size, hash_mask);
            size_t slot = h & table.mask;
            int64_t code = -1;
            while (table.slots[slot].code >= 0) {
                int64_t candidate = table.slots[slot].code;
                if (table.slots[slot].hash == h &&
                    same_bytes(bytes, size, distinct.arena + distinct.starts[candidate],
                               distinct.starts[candidate + 1] - distinct.starts[candidate])) {
                    code = candidate;
                    break;
                }
                slot = (slot + 1) & table.mask;
            }
            if (code < 0) {
                code = (int64_t)distinct.n;
                if (distinct_add(&distinct, bytes, size) < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
                table.slots[slot] = (Slot){h, code};
                if (distinct.n * 2 > table.mask + 1 && table_grow(&table) < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
            codes[at] = previous_code = code;
            previous = bytes;
            previous_size = size;
        }
    }
    result = PyList_New((Py_ssize_t)distinct.n);
    if (!result) goto done;
    for (size_t k = 0; k < distinct.n; k++) {
        PyObject *text = PyUnicode_DecodeUTF8(distinct.arena + distinct.starts[k],
                                              distinct.starts[k + 1] - distinct.starts[k], "strict");
        if (!text) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)k, text);
    }
done:
    for (Py_ssize_t k = 0; k < n_columns; k++) column_release(&columns[k]);
    free(columns);
    if (have_codes) PyBuffer_Release(&codes_view);
    free(table.slots);
    free(distinct.arena);
    free(distinct.starts);
    return result;
}

/* ------------------------------------------------------------------------------------------- */
/* row_keys(column, out, hash_mask, sort): every row's 64-bit hash (sort false) or its tie-break
 * sort key (two words, sort true), in input order. */

static int hash_column(const Column *c, int index, uint64_t *out, uint64_t mask) {
    for (Py_ssize_t i = 0; i < c->n; i++) {
        const char *bytes;
        Py_ssize_t size;
        if (read_row(c, index, i, &bytes, &size) < 0) return -1;
        out[i] = hash_bytes(bytes, size, mask);
    }
    return 0;
}

static int sort_key_column(const Column *c, uint64_t *out) {
    for (Py_ssize_t i = 0; i < c->n; i++) {
        const char *bytes;
        Py_ssize_t size;
        if (read_row(c, 0, i, &bytes, &size) < 0) return -1;
        sort_key(bytes, size, &out[2 * i], &out[2 * i + 1]);
    }
    return 0;
}

static PyObject *row_keys(PyObject *self, PyObject *args) {
    PyObject *spec, *out_object;
    unsigned long long hash_mask;
    int sort;
    if (!PyArg_ParseTuple(args, "OOKp", &spec, &out_object, &hash_mask, &sort)) return NULL;
    Column column;
    Py_buffer out;
    if (column_parse(spec, &column) < 0) return NULL;
    if (get_view(out_object, &out, column.n, sort ? 16 : 8, 1, "keys") < 0) {
        column_release(&column);
        return NULL;
    }
    int failed = sort ? sort_key_column(&column, out.buf) : hash_column(&column, 0, out.buf, hash_mask);
    PyBuffer_Release(&out);
    column_release(&column);
    return failed ? NULL : Py_NewRef(Py_None);
}

/* ------------------------------------------------------------------------------------------- */
/* join(run_docs, qrels_docs, run_bounds, run_grouped, qrels_bounds, qrels_grouped, run_hashes,
 *      qrels_hashes, run_rows_out, qrels_rows_out, hash_mask)
 *      -> (pairs, qrels has a duplicate, run has a duplicate)
 *
 * Rows are grouped by query code: code q's rows are grouped[bounds[q]:bounds[q + 1]]. Each
 * query's qrels documents, then its run documents, go into a small table of their own, so the
 * work stays in cache. hashes: None, or each row's hash in grouped order (row_keys' gathered
 * by grouped). For a shuffled run that order is what keeps the loop sequential: hashing the
 * rows as they come would read every row's bytes at random (0.94 s on 10M shuffled rows). */

typedef struct {
    uint64_t hash;
    int64_t row;   /* input row, tagged: qrels rows are stored as -(row + 1) */
    int64_t stamp; /* the query code that wrote the entry; others are empty */
} Entry;

/* The hash of the row at position at of grouped: from hashes when given, else read now. */
static inline int grouped_hash(const Column *c, int index, const uint64_t *hashes, Py_ssize_t at, int64_t row,
                               uint64_t mask, uint64_t *h) {
    if (hashes != NULL) {
        *h = hashes[at];
        return 0;
    }
    const char *bytes;
    Py_ssize_t size;
    if (read_row(c, index, row, &bytes, &size) < 0) return -1;
    *h = hash_bytes(bytes, size, mask);
    return 0;
}

/* Scans query q's entries from h's slot to the first free one, which it returns. A stored row
 * whose bytes equal those of row (of column) is recorded: a qrels row in *same_qrels, a run row in
 * *same_run. Bytes are read only when the hashes are equal. */
static inline size_t scan(const Entry *entries, size_t mask, int64_t q, uint64_t h, const Column *column, int64_t row,
                          const Column *run, const Column *qrels, int64_t *same_qrels, int64_t *same_run) {
    const char *bytes = NULL, *other = NULL;
    Py_ssize_t size = 0, other_size = 0;
    int fetched = 0;
    size_t slot = h & mask;
    for (; entries[slot].stamp == q; slot = (slot + 1) & mask) {
        if (entries[slot].hash != h) continue;
        if (!fetched) fetched = column_get(column, row, &bytes, &size) == 0;
        int64_t stored = entries[slot].row, stored_row = stored < 0 ? -stored - 1 : stored;
        column_get(stored < 0 ? qrels : run, stored_row, &other, &other_size);
        if (same_bytes(bytes, size, other, other_size)) *(stored < 0 ? same_qrels : same_run) = stored_row;
    }
    return slot;
}

/* Adds the row at position at of a side's grouped rows to query q's entries: hashes it, scans
 * (above), stores it, a qrels row tagged negative. Returns -1 on a value that is not a str. */
static inline int add_row(Entry *entries, size_t mask, int64_t q, const Column *side, int index,
                          const uint64_t *hashes, Py_ssize_t at, int64_t row, uint64_t hash_mask, const Column *run,
                          const Column *qrels, int64_t *same_qrels, int64_t *same_run) {
    uint64_t h;
    if (grouped_hash(side, index, hashes, at, row, hash_mask, &h) < 0) return -1;
    size_t slot = scan(entries, mask, q, h, side, row, run, qrels, same_qrels, same_run);
    entries[slot] = (Entry){h, side == qrels ? -row - 1 : row, q};
    return 0;
}

static PyObject *join(PyObject *self, PyObject *args) {
    PyObject *specs[2], *objects[8];
    unsigned long long hash_mask;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOK", &specs[0], &specs[1], &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7], &hash_mask))
        return NULL;
    Column run = {0}, qrels = {0};
    Py_buffer views[8];
    int held[8] = {0};
    Entry *entries = NULL;
    PyObject *result = NULL;
    if (column_parse(specs[0], &run) < 0 || column_parse(specs[1], &qrels) < 0) goto done;
    /* bounds: n_codes + 1 each; grouped and hashes: a row each; the outputs: room for every run row. */
    const Py_ssize_t sizes[8] = {1, run.n, 1, qrels.n, run.n, qrels.n, run.n, run.n};
    const char *names[8] = {"run_bounds", "run_grouped", "qrels_bounds", "qrels_grouped", "run_hashes",
                            "qrels_hashes", "run_rows", "qrels_rows"};
    for (int k = 0; k < 8; k++) {
        if (objects[k] == Py_None && (k == 4 || k == 5)) continue;
        if (get_view(objects[k], &views[k], sizes[k], 8, k >= 6, names[k]) < 0) goto done;
        held[k] = 1;
    }
    if (views[0].len != views[2].len) {
        PyErr_SetString(PyExc_ValueError, "run_bounds and qrels_bounds differ in length");
        goto done;
    }
    const int64_t *run_bounds = views[0].buf, *run_grouped = views[1].buf;
    const int64_t *qrels_bounds = views[2].buf, *qrels_grouped = views[3].buf;
    const uint64_t *run_hashes = held[4] ? views[4].buf : NULL, *qrels_hashes = held[5] ? views[5].buf : NULL;
    int64_t *run_rows = views[6].buf, *qrels_rows = views[7].buf;
    Py_ssize_t n_codes = views[0].len / 8 - 1;

    int64_t widest = 0;
    for (Py_ssize_t q = 0; q < n_codes; q++) {
        int64_t width = (run_bounds[q + 1] - run_bounds[q]) + (qrels_bounds[q + 1] - qrels_bounds[q]);
        if (width > widest) widest = width;
    }
    size_t capacity = 16;
    while (capacity < (size_t)widest * 2) capacity *= 2;
    entries = malloc(capacity * sizeof(Entry));
    if (!entries) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < capacity; i++) entries[i].stamp = -1;

    Py_ssize_t pairs = 0;
    int run_duplicate = 0, qrels_duplicate = 0;
    for (Py_ssize_t q = 0; q < n_codes; q++) {
        int64_t width = (run_bounds[q + 1] - run_bounds[q]) + (qrels_bounds[q + 1] - qrels_bounds[q]);
        if (width == 0) continue;
        size_t mask = 15;
        while (mask + 1 < (size_t)width * 2) mask = mask * 2 + 1;
        for (int64_t at = qrels_bounds[q]; at < qrels_bounds[q + 1]; at++) {
            int64_t same_qrels = -1, same_run = -1;
            if (add_row(entries, mask, q, &qrels, 1, qrels_hashes, at, qrels_grouped[at], hash_mask, &run, &qrels,
                        &same_qrels, &same_run) < 0)
                goto done;
            qrels_duplicate |= same_qrels >= 0;
        }
        for (int64_t at = run_bounds[q]; at < run_bounds[q + 1]; at++) {
            int64_t row = run_grouped[at], judged_by = -1, same_run = -1;
            if (add_row(entries, mask, q, &run, 0, run_hashes, at, row, hash_mask, &run, &qrels, &judged_by,
                        &same_run) < 0)
                goto done;
            run_duplicate |= same_run >= 0;
            if (judged_by >= 0) {
                run_rows[pairs] = row;
                qrels_rows[pairs] = judged_by;
                pairs++;
            }
        }
    }
    result = Py_BuildValue("(nOO)", pairs, qrels_duplicate ? Py_True : Py_False, run_duplicate ? Py_True : Py_False);
done:
    for (int k = 0; k < 8; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    column_release(&run);
    column_release(&qrels);
    free(entries);
    return result;
}

static PyMethodDef methods[] = {
    {"factorize", factorize, METH_VARARGS, "Codes of string ids, in order of first appearance; returns the ids."},
    {"row_keys", row_keys, METH_VARARGS, "Each row's 64-bit hash, or its tie-break sort key, in input order."},
    {"join", join, METH_VARARGS, "Run rows and the qrels rows that judge them, per query; duplicate rows."},
    {"break_ties", rerankeval_break_ties, METH_VARARGS, "Reorder tied slots by doc_id descending."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_strings", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__strings(void) { return PyModule_Create(&module); }
