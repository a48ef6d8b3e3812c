/* String-id kernels of the grade matrix: query-id coding and the run/qrels join by (query,
 * doc_id) with duplicate checks, and the module that holds every kernel. Grouping rows by query
 * is in _group.c, the ranking (score keys, ties, trec_eval's tie-break) in _ranking.c, the shared
 * column reader in _columns.h.
 *
 * Why compiled code: the join must read every id once. On 10M run rows, reading ids that are
 * plain Python str objects through any library (pyarrow, polars, pandas) costs more than the whole
 * evaluation is allowed. Here each id is read in place, from Arrow's buffers or from the str
 * object, and hashed once (benchmarks/bench_metrics.py; the figures of each choice in this file,
 * _group.c and _ranking.c: results/benchmarks/kernels.yaml). Equal hashes are always confirmed on the bytes, so a collision costs time, never a
 * wrong result.
 */
#include "_columns.h"

/* ------------------------------------------------------------------------------------------- */
/* factorize(columns, codes_out, hash_mask) -> list of distinct str, in order of first appearance.
 * codes_out gets each row's code, the columns' rows one after the other. */

/* Open addressing, at most 1/4 full. A slot holds the id's hash, code, size and words: an id of up
 * to 16 bytes is confirmed within the slot, so a lookup reads one cache line. Each of the slot,
 * the prefetched lookups (below) and the 1/4 fill made coding bench_metrics.py's shuffled rows
 * faster (results/benchmarks/kernels.yaml). */
typedef struct {
    uint64_t hash;
    int32_t code; /* -1: empty */
    int32_t size;
    uint64_t words[2]; /* id_words */
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
    /* Rows go in batches: the first pass hashes a batch and prefetches each hash's slot, so the
     * second pass's lookups, which would each wait for memory on shuffled rows, overlap. */
    enum { BATCH = 64 };
    uint64_t hashes[BATCH], words[BATCH][2];
    Py_ssize_t sizes[BATCH];
    for (Py_ssize_t k = 0; k < n_columns; k++) {
        const Column *c = &columns[k];
        int64_t previous_code = -1;
        uint64_t previous_words[2] = {0, 0};
        Py_ssize_t previous_size = -1;
        for (Py_ssize_t base = 0; base < c->n; base += BATCH) {
            Py_ssize_t end = base + BATCH < c->n ? base + BATCH : c->n;
            const char *bytes;
            Py_ssize_t size;
            for (Py_ssize_t i = base; i < end; i++) {
                uint64_t *w = words[i - base];
                if (read_row(c, (int)k, i, &bytes, &size) < 0) goto done;
                id_words(bytes, size, w);
                sizes[i - base] = size;
                /* Runs group their rows by query: most rows repeat the previous id (marked: hash 1). */
                if (size <= 16 && size == previous_size && w[0] == previous_words[0] && w[1] == previous_words[1]) {
                    hashes[i - base] = 1;
                    continue;
                }
                uint64_t h = hash_words(bytes, size, w, hash_mask) & ~(uint64_t)1;
                hashes[i - base] = h;
                __builtin_prefetch(&table.slots[h & table.mask]);
                previous_size = size;
                previous_words[0] = w[0];
                previous_words[1] = w[1];
            }
            for (Py_ssize_t i = base; i < end; i++, at++) {
                uint64_t h = hashes[i - base], *w = words[i - base];
                if (h == 1) {
                    codes[at] = previous_code;
                    continue;
                }
                size = sizes[i - base];
                size_t slot = h & table.mask;
                int64_t code = -1;
                for (; table.slots[slot].code >= 0; slot = (slot + 1) & table.mask) {
                    const Slot *s = &table.slots[slot];
                    if (s->hash != h || s->size != size || s->words[0] != w[0] || s->words[1] != w[1]) continue;
                    if (size <= 16 || (column_get(c, i, &bytes, &size) == 0 &&
                                       same_bytes(bytes, size, distinct.arena + distinct.starts[s->code], size))) {
                        code = s->code;
                        break;
                    }
                }
                if (code < 0) {
                    code = (int64_t)distinct.n;
                    column_get(c, i, &bytes, &size);
                    if (code == INT32_MAX || size > INT32_MAX || distinct_add(&distinct, bytes, size) < 0) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    table.slots[slot] = (Slot){h, (int32_t)code, (int32_t)size, {w[0], w[1]}};
                    if (distinct.n * 4 > table.mask + 1 && table_grow(&table) < 0) {
                        PyErr_NoMemory();
                        goto done;
                    }
                }
                codes[at] = previous_code = code;
            }
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
/* join(run_docs, qrels_docs, run_bounds, run_packed, qrels_bounds, qrels_packed, row_bits,
 *      run_positions_out, qrels_rows_out, hash_mask) -> (pairs, qrels has a duplicate, run has a duplicate)
 *
 * Each judged run row: its position in the run's grouped order and the qrels row judging it.
 *
 * Rows are grouped by query code: code q's rows are at positions bounds[q]:bounds[q + 1] of its
 * side's grouped order. packed: group's output (each row with its id's hash above row_bits) for
 * rows out of query order; None for rows in query order already, whose ids are then read and
 * hashed here, in order. Each query's qrels documents, then its run documents, go into a small
 * table of their own, so the work stays in cache. */

typedef struct {
    uint64_t hash;
    int64_t row;   /* input row, tagged: qrels rows are stored as -(row + 1) */
    int64_t stamp; /* the query code that wrote the entry; others are empty */
} Entry;

typedef struct {
    const Column *docs;
    const int64_t *bounds;
    const uint64_t *packed; /* NULL: in query order */
    int index;              /* the column's place in the kernel's arguments, for messages */
} Side;

/* One join: its two sides, the current query's small table, the confirmation mode. */
typedef struct {
    Side run, qrels;
    int row_bits;
    uint64_t row_mask, hash_mask;
    Entry *entries;
    size_t capacity, mask;
    int64_t q;
    int defer;     /* a run row judged by an equal hash is confirmed afterwards, in confirm_pairs */
    int ambiguous; /* deferring met two qrels rows with one run row's hash */
} Join;

/* The row at position at of a side's grouped order. */
static inline int64_t row_at(const Join *j, const Side *side, int64_t at) {
    return side->packed != NULL ? (int64_t)(side->packed[at] & j->row_mask) : at;
}

/* The row at position at of a side's grouped order and its id's hash (bits above the rows). */
static inline int side_row(const Join *j, const Side *side, Py_ssize_t at, int64_t *row, uint64_t *h) {
    if (side->packed != NULL) {
        *row = row_at(j, side, at);
        *h = side->packed[at] & ~j->row_mask;
        return 0;
    }
    const char *bytes;
    Py_ssize_t size;
    *row = at;
    if (read_row(side->docs, side->index, at, &bytes, &size) < 0) return -1;
    *h = hash_bytes(bytes, size, j->hash_mask) & ~j->row_mask;
    return 0;
}

/* Scans query q's entries from h's slot to the first free one, which it returns. A stored row
 * whose bytes equal those of row (of side) is recorded: a qrels row in *same_qrels, a run row in
 * *same_run. Bytes are read only when the hashes are equal, and a run row's judgment is only
 * recorded when deferring. */
static inline size_t scan(Join *j, uint64_t h, const Side *side, int64_t row, int64_t *same_qrels, int64_t *same_run) {
    const char *bytes = NULL, *other = NULL;
    Py_ssize_t size = 0, other_size = 0;
    int fetched = 0;
    size_t slot = (h >> j->row_bits) & j->mask; /* the hash's bits start above the rows' */
    for (; j->entries[slot].stamp == j->q; slot = (slot + 1) & j->mask) {
        if (j->entries[slot].hash != h) continue;
        int64_t stored = j->entries[slot].row, stored_row = stored < 0 ? -stored - 1 : stored;
        if (j->defer && side == &j->run && stored < 0) {
            j->ambiguous |= *same_qrels >= 0;
            *same_qrels = stored_row;
            continue;
        }
        if (!fetched) fetched = column_get(side->docs, row, &bytes, &size) == 0;
        column_get(stored < 0 ? j->qrels.docs : j->run.docs, stored_row, &other, &other_size);
        if (same_bytes(bytes, size, other, other_size)) *(stored < 0 ? same_qrels : same_run) = stored_row;
    }
    return slot;
}

/* Adds the row at position at of a side's grouped order to query q's entries: scans (above),
 * stores it, a qrels row tagged negative. Returns the row, or -1 on a value that is not a str. */
static inline int64_t add_row(Join *j, const Side *side, Py_ssize_t at, int64_t *same_qrels, int64_t *same_run) {
    int64_t row;
    uint64_t h;
    if (side_row(j, side, at, &row, &h) < 0) return -1;
    size_t slot = scan(j, h, side, row, same_qrels, same_run);
    j->entries[slot] = (Entry){h, side == &j->qrels ? -row - 1 : row, j->q};
    return row;
}

/* Prefetches what column_get(c, row) reads: stage 0 the offset or the object pointer; stage 1,
 * once stage 0 has arrived, the bytes or the object. */
static inline void prefetch_row(const Column *c, int64_t row, int stage) {
    if (c->kind == 2) {
        PyObject *const *objects = c->first.buf;
        __builtin_prefetch(stage == 0 ? (const void *)&objects[row] : (const void *)objects[row]);
    } else if (stage == 0) {
        __builtin_prefetch((const char *)c->first.buf + row * (c->kind == 0 ? 4 : 8));
    } else {
        const char *bytes;
        Py_ssize_t size;
        column_get(c, row, &bytes, &size);
        __builtin_prefetch(bytes);
    }
}

/* Whether every deferred pair has equal bytes. The pairs are independent, so their bytes are
 * prefetched ahead: confirming each at once, inside the join, waited on memory at every judged
 * row of a shuffled run (the join alone took 0.32 s on scenario b's 10M shuffled rows, 0.09 s now). */
static int confirm_pairs(const Join *j, const int64_t *run_positions, const int64_t *qrels_rows, Py_ssize_t pairs) {
    enum { AHEAD = 16 };
    for (Py_ssize_t k = 0; k < pairs; k++) {
        if (k + 2 * AHEAD < pairs) {
            prefetch_row(j->run.docs, row_at(j, &j->run, run_positions[k + 2 * AHEAD]), 0);
            prefetch_row(j->qrels.docs, qrels_rows[k + 2 * AHEAD], 0);
        }
        if (k + AHEAD < pairs) {
            prefetch_row(j->run.docs, row_at(j, &j->run, run_positions[k + AHEAD]), 1);
            prefetch_row(j->qrels.docs, qrels_rows[k + AHEAD], 1);
        }
        const char *a, *b;
        Py_ssize_t na, nb;
        if (column_get(j->run.docs, row_at(j, &j->run, run_positions[k]), &a, &na) != 0 ||
            column_get(j->qrels.docs, qrels_rows[k], &b, &nb) != 0 || !same_bytes(a, na, b, nb))
            return 0;
    }
    return 1;
}

/* Every query's rows through the table; returns the number of pairs, or -1 on a value that is not a str. */
static Py_ssize_t join_queries(Join *j, Py_ssize_t n_codes, int64_t *run_positions, int64_t *qrels_rows,
                               int *qrels_duplicate, int *run_duplicate) {
    Py_ssize_t pairs = 0;
    const int64_t *run_bounds = j->run.bounds, *qrels_bounds = j->qrels.bounds;
    for (size_t i = 0; i < j->capacity; i++) j->entries[i].stamp = -1;
    for (j->q = 0; j->q < n_codes; j->q++) {
        int64_t q = j->q, width = (run_bounds[q + 1] - run_bounds[q]) + (qrels_bounds[q + 1] - qrels_bounds[q]);
        if (width == 0) continue;
        /* At most 1/8 full: most lookups end at an empty slot, a branch the CPU then predicts
         * (at 1/2 full the join alone took 0.13 s on scenario b, 0.09 s now). */
        for (j->mask = 15; j->mask + 1 < (size_t)width * 8;) j->mask = j->mask * 2 + 1;
        for (int64_t at = qrels_bounds[q]; at < qrels_bounds[q + 1]; at++) {
            int64_t same_qrels = -1, same_run = -1;
            if (add_row(j, &j->qrels, at, &same_qrels, &same_run) < 0) return -1;
            *qrels_duplicate |= same_qrels >= 0;
        }
        for (int64_t at = run_bounds[q]; at < run_bounds[q + 1]; at++) {
            int64_t judged_by = -1, same_run = -1;
            if (add_row(j, &j->run, at, &judged_by, &same_run) < 0) return -1;
            *run_duplicate |= same_run >= 0;
            if (judged_by >= 0) {
                run_positions[pairs] = at;
                qrels_rows[pairs] = judged_by;
                pairs++;
            }
        }
    }
    return pairs;
}

static PyObject *join(PyObject *self, PyObject *args) {
    PyObject *specs[2], *objects[6];
    int row_bits;
    unsigned long long hash_mask;
    if (!PyArg_ParseTuple(args, "OOOOOOiOOK", &specs[0], &specs[1], &objects[0], &objects[1], &objects[2],
                          &objects[3], &row_bits, &objects[4], &objects[5], &hash_mask))
        return NULL;
    Column run = {0}, qrels = {0};
    Py_buffer views[6];
    int held[6] = {0};
    Join j = {{&run, NULL, NULL, 0}, {&qrels, NULL, NULL, 1}, row_bits, 0, hash_mask, NULL, 0, 0, 0, 1, 0};
    PyObject *result = NULL;
    if (column_parse(specs[0], &run) < 0 || column_parse(specs[1], &qrels) < 0) goto done;
    if (row_bits < 0 || row_bits > 62 || (uint64_t)run.n > (uint64_t)1 << row_bits ||
        (uint64_t)qrels.n > (uint64_t)1 << row_bits) {
        PyErr_SetString(PyExc_ValueError, "join: row_bits too small for the rows");
        goto done;
    }
    j.row_mask = ((uint64_t)1 << row_bits) - 1;
    /* bounds: n_codes + 1 each; packed: a row each; the outputs: room for every run row. */
    const Py_ssize_t sizes[6] = {1, run.n, 1, qrels.n, run.n, run.n};
    const char *names[6] = {"run_bounds", "run_packed", "qrels_bounds", "qrels_packed", "run_positions",
                            "qrels_rows"};
    for (int k = 0; k < 6; k++) {
        if (objects[k] == Py_None && (k == 1 || k == 3)) continue;
        if (get_view(objects[k], &views[k], sizes[k], 8, k >= 4, names[k]) < 0) goto done;
        held[k] = 1;
    }
    if (views[0].len != views[2].len) {
        PyErr_SetString(PyExc_ValueError, "run_bounds and qrels_bounds differ in length");
        goto done;
    }
    j.run.bounds = views[0].buf;
    j.qrels.bounds = views[2].buf;
    j.run.packed = held[1] ? views[1].buf : NULL;
    j.qrels.packed = held[3] ? views[3].buf : NULL;
    int64_t *run_positions = views[4].buf, *qrels_rows = views[5].buf;
    Py_ssize_t n_codes = views[0].len / 8 - 1;

    int64_t widest = 0;
    for (Py_ssize_t q = 0; q < n_codes; q++) {
        int64_t width = (j.run.bounds[q + 1] - j.run.bounds[q]) + (j.qrels.bounds[q + 1] - j.qrels.bounds[q]);
        if (width > widest) widest = width;
    }
    for (j.capacity = 16; j.capacity < (size_t)widest * 8;) j.capacity *= 2;
    j.entries = malloc(j.capacity * sizeof(Entry));
    if (!j.entries) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pairs;
    int run_duplicate, qrels_duplicate;
    /* Deferred confirmation first; a pair whose bytes differ (a hash collision) or an ambiguous
     * match, both as rare as hash collisions, make the join run again confirming at once. */
    for (;; j.defer = 0) {
        run_duplicate = qrels_duplicate = 0;
        pairs = join_queries(&j, n_codes, run_positions, qrels_rows, &qrels_duplicate, &run_duplicate);
        if (pairs < 0) goto done;
        if (!j.defer || (!j.ambiguous && confirm_pairs(&j, run_positions, qrels_rows, pairs))) break;
    }
    result = Py_BuildValue("(nOO)", pairs, qrels_duplicate ? Py_True : Py_False, run_duplicate ? Py_True : Py_False);
done:
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    column_release(&run);
    column_release(&qrels);
    free(j.entries);
    return result;
}

static PyMethodDef methods[] = {
    {"factorize", factorize, METH_VARARGS, "Codes of string ids, in order of first appearance; returns the ids."},
    {"sort_keys", rerankeval_sort_keys, METH_VARARGS, "Each row's tie-break sort key, in input or grouped order."},
    {"count_codes", rerankeval_count_codes, METH_VARARGS, "Rows per code, and whether the codes never decrease."},
    {"group", rerankeval_group, METH_VARARGS, "Rows grouped by code (a stable counting sort), with their ids' hashes."},
    {"join", join, METH_VARARGS, "Judged run rows (grouped positions) and their qrels rows; duplicate rows."},
    {"score_keys", rerankeval_score_keys, METH_VARARGS, "Descending float32 keys of scores, shifted, scattered."},
    {"find_ties", rerankeval_find_ties, METH_VARARGS, "Marks equal neighbours in rows of sorted keys."},
    {"ranked_values", rerankeval_ranked_values, METH_VARARGS, "Per-row values in each query's ranked order."},
    {"break_ties", rerankeval_break_ties, METH_VARARGS, "Reorder tied slots by doc_id descending."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_strings", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__strings(void) { return PyModule_Create(&module); }
